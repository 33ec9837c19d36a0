#!/usr/bin/perl
# fuzz/http/junk-redis.pl PORT [SEED] - a "Redis" that answers every read
# with something from a list of wrong, odd or broken replies: error and
# NOSCRIPT replies, verdicts out of range, a SCRIPT LOAD answer with the
# wrong SHA1, nested and nil arrays, protocol garbage, half a reply and a
# close, silence. The module must turn all of it into an error (or, for
# the well-formed verdicts, a decision) without touching memory it should
# not. Replies larger than Redis would ever send to this module are
# included, but not multi-bulk counts in the billions: hiredis 0.14
# allocates the element array up front, which is its own limit and
# outside this module (see the reply fuzz target).
#
# One process, non-blocking: it stays responsive to many children at once.
use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;

my ($port, $seed) = @ARGV;
die "usage: $0 PORT [SEED]\n" unless $port;
srand($seed // 1);

my $sha = 'f' x 40;
my @junk = (
    "+OK\r\n",
    "+OK\r\n+OK\r\n",
    "-ERR junk reply\r\n",
    "-NOSCRIPT No matching script\r\n",
    "-WRONGPASS invalid username-password pair\r\n",
    "-READONLY You can't write against a read only replica.\r\n",
    "-LOADING Redis is loading the dataset in memory\r\n",
    "-ERR Error running script: script error\r\n",
    "*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n",
    "*4\r\n:0\r\n:0\r\n:5184000000\r\n:5184000000\r\n",
    "*4\r\n:7\r\n:2\r\n:3\r\n:4\r\n",
    "*4\r\n:1\r\n:-1\r\n:3\r\n:4\r\n",
    "*4\r\n:1\r\n:9223372036854775807\r\n:0\r\n:0\r\n",
    "*4\r\n:0\r\n:0\r\n:5184000001\r\n:1\r\n",
    "*4\r\n\$1\r\n1\r\n\$1\r\n2\r\n\$1\r\n3\r\n\$1\r\n4\r\n",
    "*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n",
    "*3\r\n\$1\r\na\r\n*1\r\n:1\r\n\$-1\r\n",
    "*4\r\n*4\r\n*4\r\n*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n",
    "\$40\r\n$sha\r\n",
    "\$-1\r\n",
    "*-1\r\n",
    "*0\r\n",
    ":-9223372036854775808\r\n",
    ":99999999999999999999999\r\n",
    "!!! not resp\r\n",
    "\$5\r\nabc\r\n",
    "+" . ('x' x 100000) . "\r\n",
    "-" . ('e' x 70000) . "\r\n",
    "*100000\r\n",
    "*4\r\n:1\r\n",
    "\0\0\0\0",
    'close',
    'silence',
);

my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port,
                              Listen => 128, ReuseAddr => 1, Proto => 'tcp')
    or die "junk-redis: listen on $port: $!\n";
my $sel = IO::Select->new($l);
$SIG{PIPE} = 'IGNORE';
while (1) {
    for my $fh ($sel->can_read(1)) {
        if ($fh == $l) {
            my $c = $l->accept or next;
            binmode $c;
            $sel->add($c);
            next;
        }
        my $got = sysread $fh, my $buf, 65536;
        if (!$got) {
            $sel->remove($fh);
            close $fh;
            next;
        }
        my $j = $junk[int rand @junk];
        next if $j eq 'silence';
        if ($j eq 'close') {
            $sel->remove($fh);
            close $fh;
            next;
        }
        syswrite $fh, $j;
    }
}
