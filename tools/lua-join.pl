#!/usr/bin/perl
# Joins a script from lua/prelude.lua and the files that follow it, with
# only the prelude's helpers those files use (Redis runs a script's whole
# text on every call: a helper defined and never called costs each call
# its closure). The prelude's head (up to its first helper) is always
# kept; a helper is kept if the files, or another helper kept, name it.
# usage: lua-join.pl PRELUDE FILE... [--tail TEXT] >OUT
use strict;
use warnings;

my ($prelude, @files) = @ARGV;
my $tail = '';
if (@files >= 2 && $files[-2] eq '--tail') {
    $tail = pop(@files) . "\n";
    pop @files;
}
sub slurp { local $/; open my $fh, '<', $_[0] or die "$_[0]: $!\n"; scalar <$fh> }

# The prelude in chunks: a chunk is a top-level "local" definition with
# the comment lines just above it, up to the next such comment or
# definition; what precedes the first is the head.
my @lines = split /(?<=\n)/, slurp($prelude);
my ($head, @chunks) = ('');
my $pending = '';
for my $l (@lines) {
    if ($l =~ /^--/) { $pending .= $l; next }
    if ($l =~ /^local (?:function )?([\w, ]+?)\s*(?:=|\()/) {
        my @names = map { s/\s+//gr } split /,/, $1;
        push @chunks, { names => \@names, text => $pending . $l };
        $pending = '';
        next;
    }
    # a helper's body is indented, up to its "end": a statement of its own
    # after the first helper would go with the helper above it
    die "$prelude: top-level statement after the first helper: $l"
        if @chunks && $l =~ /^\S/ && $l !~ /^end\b/;
    if (@chunks) { $chunks[-1]{text} .= $pending . $l } else { $head .= $pending . $l }
    $pending = '';
}
$chunks[-1]{text} .= $pending if @chunks;

# a name as a call or a value, not a field or a method (x.name, x:name):
# after "..", it is one
for my $c (@chunks) {
    $c->{pattern} = [map { qr/(?<![\w:])(?<![^.]\.)\Q$_\E\b/ } @{ $c->{names} }];
}

my $rest = join('', map { slurp($_) } @files) . $tail;
# names in comments call nothing
sub code { $_[0] =~ s/--[^\n]*//gr }
my %keep;
my $changed = 1;
my $needed = code($rest);
while ($changed) {
    $changed = 0;
    for my $i (0 .. $#chunks) {
        next if $keep{$i};
        next unless grep { $needed =~ /$_/ } @{ $chunks[$i]{pattern} };
        $keep{$i} = 1;
        $needed .= code($chunks[$i]{text});
        $changed = 1;
    }
}
my $out = join '', $head, (map { $chunks[$_]{text} } grep { $keep{$_} } 0 .. $#chunks), $rest;
# Whatever was missed above (a name in a string, after a "--" inside a
# string): a helper left out must not be named anywhere in the script,
# strings and trailing comments included; only whole comment lines are
# read as comments here.
my $check = $out =~ s/^[ \t]*--[^\n]*//gmr;
for my $i (grep { !$keep{$_} } 0 .. $#chunks) {
    for my $re (@{ $chunks[$i]{pattern} }) {
        die "$prelude: a helper left out is named in the script ($re)\n"
            if $check =~ $re;
    }
}
print $out;
