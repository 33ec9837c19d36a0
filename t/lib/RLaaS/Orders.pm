package RLaaS::Orders;
# A helper process a test forks and steers (RLaaS::Relay,
# RLaaS::FakeSentinel): the test writes its orders to a small file, the
# process rereads it whenever it changes and writes back the number of the
# orders it took, so that the test knows they hold from then on. The
# process exits when the test process goes away.
#
# A subclass gives _orders (the fields of its orders, read in the test
# from the object) and _run($parent) (the process), which calls
# take_orders to learn new ones.
use strict;
use warnings;
use File::Temp qw(tempdir);
use File::Spec::Functions qw(catfile);
use POSIX ();
use Time::HiRes qw(sleep);

# spawn(NAME, FIELD => VALUE...): the object, its process running and its
# first orders taken.
sub spawn {
    my ($class, $name, %fields) = @_;
    my $dir = tempdir("rlaas-$name-XXXXXX", TMPDIR => 1, CLEANUP => 1);
    my $self = bless { %fields, dir => $dir, ctl => catfile($dir, 'ctl'),
                       ready => catfile($dir, 'ready'), seen => 0 }, $class;
    $self->_write;
    my $parent = $$;
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        eval { $self->_run($parent) };
        if ($@ && open my $e, '>', "$dir/error") { print $e $@; close $e }
        POSIX::_exit(0);
    }
    $self->{pid} = $pid;
    $self->_wait_seen;
    return $self;
}

# orders(): the object's fields changed: the process follows them now.
sub orders {
    my $self = shift;
    $self->_write;
    $self->_wait_seen;
}

sub stop {
    my $self = shift;
    return unless $self->{pid};
    kill 'TERM', $self->{pid};
    waitpid $self->{pid}, 0;
    delete $self->{pid};
}

sub DESTROY { local ($?, $@); $_[0]->stop if $_[0]{pid} }

my $seq = 0;
sub _write {
    my $self = shift;
    $self->{seq} = ++$seq;
    my $tmp = "$self->{ctl}.tmp";
    open my $fh, '>', $tmp or die "$tmp: $!";
    print $fh join(' ', $self->{seq}, $self->_orders), "\n";
    close $fh;
    rename $tmp, $self->{ctl} or die "rename: $!";
}

# until the process has taken the orders (it writes their number back);
# 2000 x 5 ms, 10 s or more: a loaded machine may be slow to schedule it
sub _wait_seen {
    my $self = shift;
    for (1 .. 2000) {
        if (open my $fh, '<', $self->{ready}) {
            my $l = <$fh> // '';
            return if $l =~ /^(\d+)/ && $1 >= $self->{seq};
        }
        sleep 0.005;
    }
    my $why = '';
    if (open my $e, '<', "$self->{dir}/error") { local $/; $why = <$e> // '' }
    die ref($self) . " did not take its orders $why\n";
}

# In the process: the fields of orders not taken yet, or ().
sub take_orders {
    my $self = shift;
    open my $fh, '<', $self->{ctl} or return ();
    my $l = <$fh> // '';
    close $fh;
    my ($s, @f) = split ' ', $l;
    return () unless defined $s && @f && $s != $self->{seen};
    $self->{seen} = $s;
    open my $r, '>', "$self->{ready}.tmp" or return @f;
    print $r "$s\n";
    close $r;
    rename "$self->{ready}.tmp", $self->{ready};
    return @f;
}

1;
