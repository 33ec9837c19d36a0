# The user documentation (README.md and docs/**/*.md, docs/_incoming/
# excepted) cannot go stale or render broken:
# - rendering: every fenced block closes (a fence with text after it does
#   not close one), every table row is under a header and a |---| line (a
#   blank line cuts a table), every relative link and #anchor leads
#   somewhere, and no untagged block holds httpd configuration;
# - every ```apache block passes `apache2 -t` with the built module, as
#   server configuration; one whose first line is "# .htaccess" is written
#   as a .htaccess under AllowOverride All (t/conf/x-newcomer.conf.in) and
#   exercised by a request to the test server; one whose first line is
#   "# continued from the block above" is checked after the previous
#   apache block of its page. No directive line carries a trailing
#   comment (httpd has none). Absolute paths under /etc/, /srv/ and
#   /var/www/ become placeholders in a temporary directory (a directory
#   after DocumentRoot or <Directory, or ending in /, a file of 32 bytes
#   readable by its owner only for a name ending in .secret, as
#   RLaaSKeySecret wants, else an empty file);
#   APACHE_LOG_DIR, RLAAS_KIT_REDIS and RLAAS_KIT_PREFIX are set.
# - every directive the built module registers (`apache2 -L` with the
#   module loaded) has its entry in docs/directives.md, in alphabetical
#   order, with the rows of httpd's module pages, a Context and an Override
#   that agree with what the module registers, and an apache example using
#   it; no entry names a directive the module does not register.
# docs/developers.md ("Writing the docs") describes these conventions.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use File::Path qw(make_path remove_tree);
use File::Find ();
use File::Basename qw(dirname basename);
use File::Spec::Functions qw(catfile abs2rel);
use RLaaS::Test qw(:all);

my $TOP = repo_top();
my $HTTPD = $ENV{APACHE_TEST_HTTPD} || '/usr/sbin/apache2';

sub slurp { my ($f) = @_; open my $fh, '<', $f or die "$f: $!"; local $/; <$fh> }
sub rel { abs2rel($_[0], $TOP) }

# ------------------------------------------------------------ the pages

sub pages {
    my @f = (catfile($TOP, 'README.md'));
    File::Find::find({
        no_chdir => 1,
        preprocess => sub { grep { $_ ne '_incoming' } @_ },
        wanted => sub { push @f, $File::Find::name if /\.md\z/ && -f },
    }, catfile($TOP, 'docs'));
    return sort @f;
}

# GitHub's anchor for a heading: lower case, punctuation dropped, spaces
# made hyphens; a repeated heading gets -1, -2, ...
sub slug {
    my ($text) = @_;
    (my $s = lc $text) =~ s/[^\w\- ]//g;
    $s =~ s/ /-/g;
    return $s;
}

# scan(FILE): { blocks => [{start, info, lines}], errors => [...],
# anchors => {slug => 1}, prose => text outside code blocks }
my %SCAN;
sub scan {
    my ($file) = @_;
    return $SCAN{$file} if $SCAN{$file};
    my @lines = split /\n/, slurp($file), -1;
    my (@blocks, @errors, %anchors, %seen, @prose);
    my ($in, $prev_table) = (undef, 0);
    for my $i (0 .. $#lines) {
        my ($l, $n) = ($lines[$i], $i + 1);
        if ($in) {
            push @prose, '';
            if ($l =~ /^\s*(`{3,}|~{3,})\s*$/
                && substr($1, 0, 1) eq substr($in->{fence}, 0, 1)
                && length($1) >= length($in->{fence})) {
                push @blocks, $in;
                undef $in;
            }
            elsif ($l =~ /^\s*(`{3,}|~{3,})\s*\S/) {
                push @errors, "line $n: a fence with text after it does not close the block opened at line $in->{start}";
                push @{ $in->{lines} }, $l;
            }
            else {
                push @{ $in->{lines} }, $l;
            }
            next;
        }
        if ($l =~ /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/) {
            $in = { start => $n, fence => $2, info => lc $3, indent => length $1, lines => [] };
            push @prose, '';
            $prev_table = 0;
            next;
        }
        push @prose, $l;
        my $is_row = $l =~ /^\s*\|/;
        if ($is_row && !$prev_table) {
            my $next = $lines[$i + 1] // '';
            push @errors, "line $n: a table row without a header row and a |---| line (a blank line inside a table cuts it)"
                unless $next =~ /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
        }
        $prev_table = $is_row;
        if ($l =~ /^#{1,6}\s+(.*?)\s*#*\s*$/) {
            my $s = slug($1);
            my $k = $seen{$s}++ ? "$s-" . ($seen{$s} - 1) : $s;
            $anchors{$k} = 1;
        }
    }
    push @errors, "the fence opened at line $in->{start} never closes" if $in;
    for my $b (@blocks) {
        next if length $b->{info};
        my ($bad) = grep { /^\s*RLaaS[A-Z]\w*\s+\S/ || /^\s*<\/?(?:Location|Directory|VirtualHost|Files|If)\b/ } @{ $b->{lines} };
        push @errors, "line $b->{start}: an untagged block holds httpd configuration ('$bad'): tag it ```apache"
            if defined $bad;
    }
    return $SCAN{$file} = { blocks => \@blocks, errors => \@errors, anchors => \%anchors,
                            prose => join("\n", @prose) };
}

# The relative links of a page that lead nowhere.
sub dead_links {
    my ($file) = @_;
    my $text = scan($file)->{prose};
    $text =~ s/`[^`\n]*`//g;    # code spans are not links
    my @dead;
    while ($text =~ /!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g) {
        my $target = $1;
        next if $target =~ /^[a-z][a-z0-9+.-]*:/i;
        my ($path, $anchor) = split /#/, $target, 2;
        my $dest = length $path ? catfile(dirname($file), $path) : $file;
        if (!-e $dest) {
            push @dead, "$target (no such file)";
            next;
        }
        next unless defined $anchor && length $anchor;
        if ($dest !~ /\.md\z/) {
            push @dead, "$target (an anchor into a file that is not a page)";
            next;
        }
        push @dead, "$target (no such heading)" unless scan($dest)->{anchors}{$anchor};
    }
    return @dead;
}

my @pages = pages();
ok(scalar(grep { m{/docs/directives\.md\z} } @pages), 'docs/directives.md exists: ' . join(' ', map { rel($_) } @pages));
for my $f (@pages) {
    my $s = scan($f);
    is(scalar(@{ $s->{errors} }), 0, rel($f) . ': renders (fences, tables, untagged configuration)')
        or diag(join "\n", @{ $s->{errors} });
    my @dead = dead_links($f);
    is(scalar(@dead), 0, rel($f) . ': every relative link and anchor leads somewhere')
        or diag(join "\n", @dead);
}

# ------------------------------------------------------------ apache blocks

# (RLAAS_TEST_NO_MODULE=1 is the harness's own development mode: no module)
if ($ENV{RLAAS_TEST_NO_MODULE}) {
    diag('RLAAS_TEST_NO_MODULE: the examples and the reference are not checked');
    done_testing();
    exit 0;
}
unless (ok(have_module(), 'the module is built: ' . module_path())) {
    done_testing();
    exit 1;
}

chomp(my $libexec = `apxs -q LIBEXECDIR 2>/dev/null` || '');
$libexec ||= '/usr/lib/apache2/modules';
my %static = map { /^\s*mod_(\w+)\.c/ ? ($1 => 1) : () } split /\n/, `'$HTTPD' -l 2>/dev/null`;
# the modules the examples use besides mod_rlaas
my $MODS = join '', map { "LoadModule ${_}_module $libexec/mod_$_.so\n" }
    grep { !$static{$_} && -e "$libexec/mod_$_.so" }
    qw(authn_core authn_file authz_host authz_user auth_basic auth_digest
       alias dir env headers log_config mime remoteip rewrite setenvif status info);

# Blocks as a reader copies them: the indentation of the list item they
# sit in removed.
sub block_text {
    my ($blk) = @_;
    my @l = @{ $blk->{lines} };
    my ($ind) = sort { $a <=> $b } map { /^(\s*)\S/ ? length $1 : () } @l;
    $ind //= 0;
    return join '', map { (length($_) >= $ind ? substr($_, $ind) : '') . "\n" } @l;
}

sub kind {
    my ($text) = @_;
    my ($first) = grep { /\S/ } split /\n/, $text;
    $first //= '';
    return 'htaccess' if $first =~ /^\s*#\s*\.htaccess\s*$/;
    return 'continued' if $first =~ /^\s*#\s*continued from the block above\s*$/i;
    return 'server';
}

# Lines with a comment after a directive: httpd reads it as arguments.
sub trailing_comments {
    my ($text) = @_;
    my @bad;
    for my $l (split /\n/, $text) {
        next if $l =~ /^\s*(#|$)/;
        (my $u = $l) =~ s/"(?:[^"\\]|\\.)*"//g;
        push @bad, $l if $u =~ /\s#/;
    }
    return @bad;
}

# Absolute paths under /etc/, /srv/ and /var/www/ moved into $dir, and
# created there.
sub placeholders {
    my ($text, $dir) = @_;
    my @out;
    for my $l (split /\n/, $text, -1) {
        my $as_dir = $l =~ /^\s*(?:DocumentRoot|<Directory)\b/i;
        $l =~ s{(?<![\w/.:\$])(/(?:etc|srv|var/www)/[^\s"'>]*)}{
            my $p = "$dir/placeholders$1";
            if ($as_dir || $p =~ m{/\z}) { make_path($p) }
            else {
                make_path(dirname($p));
                open my $fh, '>>', $p or die "$p: $!";
                # RLaaSKeySecret refuses an empty file, and warns about one
                # others can read
                print $fh 'x' x 32 if $p =~ /\.secret\z/ && -z $p;
                close $fh;
                chmod 0600, $p if $p =~ /\.secret\z/;
            }
            $p
        }ge;
        push @out, $l;
    }
    return join "\n", @out;
}

my (@server, @hta);
for my $f (@pages) {
    my $prev;
    for my $b (grep { $_->{info} eq 'apache' } @{ scan($f)->{blocks} }) {
        my $text = block_text($b);
        my $where = rel($f) . ":$b->{start}";
        my @tc = trailing_comments($text);
        is(scalar(@tc), 0, "$where: no comment after a directive")
            or diag("httpd has no trailing comments; put the comment on a line of its own:\n" . join "\n", @tc);
        my $k = kind($text);
        if ($k eq 'continued') {
            ok(defined $prev, "$where: continues an apache block above it") or next;
            $text = "$prev\n$text";
        }
        if ($k eq 'htaccess') { push @hta, [$where, $text] }
        else { push @server, [$where, $text] }
        $prev = $text;
    }
}
ok(@server >= 50, scalar(@server) . ' apache blocks to check as server configuration');

for my $c (@server) {
    my ($where, $text) = @$c;
    my $dir = tempdir('rlaas-docs-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    make_path("$dir/logs");
    my $conf = placeholders($text, $dir);
    local %ENV = (%ENV, APACHE_LOG_DIR => "$dir/logs", RLAAS_KIT_REDIS => '127.0.0.1:6379',
                  RLAAS_KIT_PREFIX => 'rlaas:kit:');
    my ($rc, $out) = httpd_config_test($MODS . $conf, dir => $dir);
    my @other = grep { /\S/ && !/^Syntax OK$/ } split /\n/, $out;
    ok($rc == 0 && $out =~ /^Syntax OK$/m && !@other, "$where: apache2 -t accepts it, without a warning")
        or diag("$out\n---- the block as checked:\n$conf");
}

# .htaccess blocks, in directories of the running test server
{
    my $base = catfile($TOP, 't', 'htdocs', 'docs-hta');
    remove_tree($base);
    my $i = 0;
    for my $c (@hta) {
        my ($where, $text) = @$c;
        my $id = sprintf 'b%02d', $i++;
        my $d = catfile($base, $id);
        make_path($d);
        my $dir = tempdir('rlaas-docs-hta-XXXXXX', TMPDIR => 1, CLEANUP => 1);
        open my $fh, '>', "$d/.htaccess" or die "$d/.htaccess: $!";
        print $fh placeholders($text, $dir), "\n";
        close $fh;
        open $fh, '>', "$d/ok.txt" or die "$d/ok.txt: $!";
        print $fh "ok\n";
        close $fh;
        my $mark = error_log_mark();
        my $res = req("/docs-hta/$id/ok.txt");
        my $log = error_log_since($mark);
        my @complaints = grep { /docs-hta\/$id\b/ } split /\n/, $log;
        ok($res->code != 500 && !@complaints, "$where: as a .htaccess, the directory serves (" . $res->code . ')')
            or diag(join "\n", @complaints, '---- the .htaccess:', $text);
        # a limit outside any section shows in the response: it was read
        my $top = join "\n", grep { !/^\s*</ } split /\n/, do { (my $t = $text) =~ s{<(\w+)[^>]*>.*?</\1>}{}gs; $t };
        if ($top =~ /^\s*RLaaSLimit\s/mi) {
            ok(defined $res->header('RateLimit-Policy'), "$where: its RLaaSLimit applies (RateLimit-Policy: "
                . ($res->header('RateLimit-Policy') // 'none') . ')');
        }
    }
    ok(@hta >= 1, scalar(@hta) . ' .htaccess blocks exercised');
    remove_tree($base);
}

# ------------------------------------------------------------ the reference

# What the built module registers: `apache2 -L` with it loaded.
sub registered {
    my $dir = tempdir('rlaas-docs-L-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $m = mpm();
    my $conf = catfile($dir, 'httpd.conf');
    open my $fh, '>', $conf or die "$conf: $!";
    print $fh "ServerRoot \"$dir\"\nServerName localhost\nListen 127.0.0.1:1\n"
        . "PidFile \"$dir/httpd.pid\"\nErrorLog \"$dir/error_log\"\nDefaultRunTimeDir \"$dir\"\n"
        . "LoadModule mpm_${m}_module $libexec/mod_mpm_$m.so\n"
        . "LoadModule rlaas_module " . module_path() . "\n";
    close $fh;
    my $out = `'$HTTPD' -f '$conf' -L 2>&1`;
    my (%d, $cur);
    for my $l (split /\n/, $out) {
        if ($l =~ /^(\S+) \(mod_rlaas\.c\)\s*$/) { $cur = $d{$1} = { text => '' }; next }
        if ($l =~ /^\S/) { undef $cur; next }
        $cur->{text} .= "$l\n" if $cur;
    }
    for my $v (values %d) {
        my $t = $v->{text};
        $v->{server} = $t =~ /only outside <Directory>|anywhere|only at toplevel/ ? 1 : 0;
        $v->{dir} = $t =~ /only inside <Directory>|anywhere/ ? 1 : 0;
        $v->{htaccess} = $t =~ /in \.htaccess/ ? 1 : 0;
        ($v->{override}) = $t =~ /AllowOverride includes (\w+)/;
    }
    return \%d;
}

my $reg = registered();
ok(keys(%$reg) >= 40, scalar(keys %$reg) . ' directives registered by the built module');

my $ref = slurp(catfile($TOP, 'docs', 'directives.md'));
my %entry;
my @order;
for my $part (split /^(?=## )/m, $ref) {
    next unless $part =~ /\A## (\S+)\s*\n/;
    my $name = $1;
    next unless $name =~ /^RLaaS/;
    push @order, $name;
    $entry{$name} = $part;
}

for my $name (sort keys %$reg) {
    my $e = $entry{$name};
    ok(defined $e, "$name has an entry in docs/directives.md") or next;
    my %row;
    $row{$1} = $2 while $e =~ /^\|\s*(\w+):\s*\|\s*(.*?)\s*\|\s*$/mg;
    my @missing = grep { !defined $row{$_} } qw(Description Syntax Default Context Override Status Module);
    is("@missing", '', "$name: the rows of httpd's module pages");
    like($row{Syntax} // '', qr/`\Q$name\E[ `]/, "$name: the Syntax row spells it");
    my $r = $reg->{$name};
    my $ctx = $row{Context} // '';
    my @wrong;
    push @wrong, 'server config' if ($ctx =~ /server config/ ? 1 : 0) != $r->{server};
    push @wrong, 'directory' if ($ctx =~ /\bdirectory\b/ ? 1 : 0) != $r->{dir};
    push @wrong, '.htaccess' if ($ctx =~ /\.htaccess/ ? 1 : 0) != $r->{htaccess};
    is("@wrong", '', "$name: Context '$ctx' agrees with the module") or diag($r->{text});
    my $ov = $row{Override} // '';
    if ($r->{htaccess}) {
        like($ov, qr/\b\Q$r->{override}\E\b/, "$name: Override names $r->{override}");
    }
    else {
        like($ov, qr/not in \.htaccess/, "$name: Override says not in .htaccess");
    }
    like($row{Module} // '', qr/mod_rlaas/, "$name: Module mod_rlaas");
    my $example = 0;
    while ($e =~ /^```apache\n(.*?)^```\s*$/msg) {
        $example = 1 if $1 =~ /^\s*\Q$name\E\b/m;
    }
    ok($example, "$name: an apache example that uses it");
}
my @stale = grep { !$reg->{$_} } @order;
is("@stale", '', 'docs/directives.md names no directive the module does not register');
is(join(' ', @order), join(' ', sort { lc $a cmp lc $b } @order), 'docs/directives.md: entries in alphabetical order');

done_testing();
