# mod_rlaas — build, test, demo.
#   make          build the module (.libs/mod_rlaas.so) with apxs
#   make test     unit tests and the Apache::Test suite (drops root itself)
#   make check    the fast loop: build, unit, Lua, the suite on event only
#   make demo     a private redis-server and httpd showing limiting live
#   make install  install the module with apxs, rlaas.load and rlaas.conf
#                 for a2enmod (where /etc/apache2/mods-available exists),
#                 and the test kit for Apache::Test suites (perl/lib) into
#                 Perl's library (as root; DESTDIR=/staging/root installs
#                 under it); make uninstall removes them
#   make deb      the Debian package libapache2-mod-rlaas (build/deb/)

APXS ?= apxs
CC ?= gcc

# Warnings are errors: the build must stay clean.
WARN = -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wcast-align \
       -Wwrite-strings -Wstrict-prototypes -Wmissing-prototypes \
       -Wformat=2 -Wno-format-nonliteral -Wundef
EXTRA_CFLAGS ?=
EXTRA_LDFLAGS ?=

# Strategy scripts, in the order of rlaas_strategy_e, then the one that
# decides several policies at once. A strategy's script is the shared
# prelude, the strategy's body (a function) and a line calling it; the
# multi script is the prelude, all six bodies and lua/multi.lua. They are
# joined into build/lua/ (tools/lua-join.pl: of the prelude, its head and
# the helpers the rest uses): those files are what the module embeds and
# what t/lua tests.
LUA_PRELUDE = lua/prelude.lua
LUA_BODIES = lua/fixed.lua lua/sliding_log.lua lua/sliding.lua lua/token.lua \
             lua/leaky.lua lua/gcra.lua
LUA = $(patsubst lua/%,build/lua/%,$(LUA_BODIES)) build/lua/multi.lua \
      build/lua/lease.lua build/lua/credit.lua build/lua/release.lua \
      build/lua/forget.lua
# Concurrency limits (RLaaSConcurrency): decided by the multi script, with
# the other policies of the request; their slots given back by the release
# script (the prelude and lua/release.lua).
LUA_CONC = lua/concurrency.lua

# Source folders (docs/developers.md): dependencies point down only,
# http -> local, redis -> core. core/, local/ and the pure parts of redis/
# need no httpd headers: they are unit-tested and fuzzed on their own.
SRC_DIRS = src/core src/local src/redis src/http
# Every C file of each folder; src/redis/rlaas_scripts.c is generated
# from lua/ (below).
CORE_SRC = $(filter-out $(GEN_SRC),\
             $(sort $(wildcard $(addsuffix /*.c,src/core src/local src/redis))))
HTTPD_SRC = $(sort $(wildcard src/http/*.c))
GEN_SRC = src/redis/rlaas_scripts.c
SRC = mod_rlaas.c $(HTTPD_SRC) $(CORE_SRC) $(GEN_SRC)
HDR = $(foreach d,$(SRC_DIRS),$(wildcard $(d)/*.h))
INC = $(foreach d,$(SRC_DIRS),-I $(d))

MODULE = .libs/mod_rlaas.so

APR_CFLAGS := $(shell apr-1-config --cppflags --includes 2>/dev/null) \
              $(shell apu-1-config --includes 2>/dev/null)
APR_LIBS := $(shell apu-1-config --link-ld 2>/dev/null) \
            $(shell apr-1-config --link-ld 2>/dev/null)

.PHONY: all test check unit demo install install-module install-conf install-perl \
        uninstall deb deb-check clean format lua

all: $(MODULE)

LUA_JOIN = perl tools/lua-join.pl $(LUA_PRELUDE)

build/lua/%.lua: $(LUA_PRELUDE) lua/%.lua tools/lua-join.pl
	@mkdir -p build/lua
	@$(LUA_JOIN) lua/$*.lua --tail 'return one(rlaas_$*)' >$@.tmp && \
	    mv $@.tmp $@

build/lua/multi.lua: $(LUA_PRELUDE) $(LUA_BODIES) $(LUA_CONC) lua/multi.lua \
                     tools/lua-join.pl
	@mkdir -p build/lua
	@$(LUA_JOIN) $(LUA_BODIES) $(LUA_CONC) lua/multi.lua >$@.tmp && \
	    mv $@.tmp $@

# RLaaSLease: the prelude, the bodies and lua/lease.lua (a portion of one
# policy's quota taken at once).
build/lua/lease.lua: $(LUA_PRELUDE) $(LUA_BODIES) lua/lease.lua \
                     tools/lua-join.pl
	@mkdir -p build/lua
	@$(LUA_JOIN) $(LUA_BODIES) lua/lease.lua >$@.tmp && mv $@.tmp $@

# Credits (RLaaSCountIf's refunds, the console's credit): the prelude, the
# bodies (each with its strategy's credit) and lua/credit.lua.
build/lua/credit.lua: $(LUA_PRELUDE) $(LUA_BODIES) lua/credit.lua \
                      tools/lua-join.pl
	@mkdir -p build/lua
	@$(LUA_JOIN) $(LUA_BODIES) lua/credit.lua >$@.tmp && mv $@.tmp $@

build/lua/release.lua: $(LUA_PRELUDE) lua/release.lua tools/lua-join.pl
	@mkdir -p build/lua
	@$(LUA_JOIN) lua/release.lua >$@.tmp && mv $@.tmp $@

# The console's reset and unban: lua/forget.lua alone (it needs no helper).
build/lua/forget.lua: lua/forget.lua
	@mkdir -p build/lua
	@cp lua/forget.lua $@.tmp && mv $@.tmp $@

lua: $(LUA) $(GEN_SRC)

$(GEN_SRC): $(LUA) tools/embed-lua.sh
	@sh tools/embed-lua.sh $@ $(LUA)

# Quiet unless V=1: apxs' libtool lines go to build/apxs.log, shown whole
# if the build fails.
V ?= 0
ifeq ($(V),1)
APXS_QUIET =
else
APXS_QUIET = >build/apxs.log 2>&1 || { cat build/apxs.log; exit 1; }
endif

$(MODULE): $(SRC) $(HDR)
	@mkdir -p build
	@echo "  CC+LD   mod_rlaas.so (apxs; V=1 shows the commands)"
	@$(APXS) -c -o mod_rlaas.la $(INC) \
	    $(foreach f,$(WARN) $(EXTRA_CFLAGS),-Wc,$(f)) \
	    $(foreach f,$(EXTRA_LDFLAGS),-Wl,$(f)) \
	    $(SRC) -lhiredis -lssl -lcrypto $(APXS_QUIET)

# ---- unit tests (cmocka), no httpd needed ----
UNIT_TESTS = $(patsubst t/unit/%.c,build/unit/%,$(wildcard t/unit/test_*.c)) \
             build/unit/test_pipeline_portable

# The core is compiled once into build/unit/libcore.a and each test linked
# against it; the two tests that need the core compiled another way (a
# define) compile it whole.
UNIT_CFLAGS = -g -O1 $(WARN) $(EXTRA_CFLAGS) $(INC) $(APR_CFLAGS)
UNIT_LIBS = $(EXTRA_LDFLAGS) -lcmocka -lhiredis -lssl -lcrypto $(APR_LIBS) -lpthread
CORE_OBJ = $(patsubst %.c,build/unit/obj/%.o,$(CORE_SRC) $(GEN_SRC))
UNIT_LIB = build/unit/libcore.a

build/unit/obj/%.o: %.c $(HDR)
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) -c -o $@ $<

$(UNIT_LIB): $(CORE_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

define UNIT_LINK
@mkdir -p build/unit
$(CC) $(UNIT_CFLAGS) -o $@ $< $(UNIT_LIB) $(UNIT_LIBS)
endef

define UNIT_BUILD
@mkdir -p build/unit
$(CC) $(UNIT_CFLAGS) $(UNIT_DEFS) -o $@ $< $(CORE_SRC) $(GEN_SRC) $(UNIT_LIBS)
endef

build/unit/%: t/unit/%.c $(UNIT_LIB) $(HDR)
	$(UNIT_LINK)

# The pipeline once more with the wait it uses where Linux futexes are not
# available, so that both ways of waiting are tested here.
build/unit/test_pipeline_portable: UNIT_DEFS = -DRLAAS_PIPE_PORTABLE
build/unit/test_pipeline_portable: t/unit/test_pipeline.c $(CORE_SRC) $(GEN_SRC) $(HDR)
	$(UNIT_BUILD)

# The table with its test hook (a process dying inside a change).
build/unit/test_table: UNIT_DEFS = -DRLAAS_TABLE_TESTING
build/unit/test_table: t/unit/test_table.c $(CORE_SRC) $(GEN_SRC) $(HDR)
	$(UNIT_BUILD)

# The local engine on standard input, driven by t/lua (ScriptTest.pm).
LOCAL_CLI = build/unit/rlaas_local_cli
$(LOCAL_CLI): t/unit/rlaas_local_cli.c $(UNIT_LIB) $(HDR)
	$(UNIT_LINK)

unit: $(UNIT_TESTS) $(LOCAL_CLI)
	@set -e; for t in $(UNIT_TESTS); do echo "== $$t"; $$t; done

test:
	sh tools/test.sh

# The fast inner loop: build, unit and Lua tests, the Apache::Test suite on
# the event MPM only (TEST_FILES="t/a.t t/b.t" narrows it further).
check:
	RLAAS_TEST_STAGES="build unit lua apache" RLAAS_TEST_MPMS=event \
	    sh tools/test.sh

demo:
	sh tools/demo.sh

# The module where apxs says modules go; with DESTDIR, under it (apxs -i
# knows no DESTDIR: its LIBEXECDIR is moved instead).
LIBEXECDIR = $(shell $(APXS) -q LIBEXECDIR)
# The test kit (perl/lib) into Perl's site library, or the vendor one with
# PERL_INSTALLDIRS=vendor (a distribution's package); PERL_LIBDIR=DIR
# anywhere else (then PERL5LIB=DIR for the suites that use it).
PERL ?= perl
PERL_INSTALLDIRS ?= site
PERL_LIBDIR = $(shell $(PERL) -MConfig -e 'print $$Config{install$(PERL_INSTALLDIRS)lib}')
KIT_PM = perl/lib/Apache/TestRLaaS.pm perl/lib/Apache/TestRunRLaaS.pm
KIT_SUB_PM = $(wildcard perl/lib/Apache/TestRLaaS/*.pm)

install: install-module install-conf install-perl

install-module: $(MODULE)
ifeq ($(DESTDIR),)
	$(APXS) -i -n rlaas mod_rlaas.la
else
	install -d $(DESTDIR)$(LIBEXECDIR)
	$(APXS) -i -S LIBEXECDIR=$(DESTDIR)$(LIBEXECDIR) -n rlaas mod_rlaas.la
endif

# Debian's layout (a2enmod rlaas): rlaas.load, pointing at where the module
# went, and rlaas.conf, the server-wide settings commented out; an existing
# rlaas.conf is the operator's and is kept.
APACHE_CONFDIR ?= /etc/apache2
MODS_AVAILABLE = $(DESTDIR)$(APACHE_CONFDIR)/mods-available
install-conf:
	@if [ -d $(APACHE_CONFDIR)/mods-available ] || [ -n "$(DESTDIR)" ]; then \
	    install -d $(MODS_AVAILABLE) && \
	    sed 's|/usr/lib/apache2/modules|$(LIBEXECDIR)|' conf/rlaas.load \
	        >$(MODS_AVAILABLE)/rlaas.load && \
	    chmod 644 $(MODS_AVAILABLE)/rlaas.load && \
	    if [ -e $(MODS_AVAILABLE)/rlaas.conf ]; then \
	        echo "kept $(MODS_AVAILABLE)/rlaas.conf"; \
	    else install -m 644 conf/rlaas.conf $(MODS_AVAILABLE)/rlaas.conf; fi && \
	    echo "installed rlaas.load and rlaas.conf in $(MODS_AVAILABLE):" \
	         "enable the module with a2enmod rlaas"; \
	else \
	    echo "no $(APACHE_CONFDIR)/mods-available: add to httpd.conf:"; \
	    echo "  LoadModule rlaas_module $(LIBEXECDIR)/mod_rlaas.so"; \
	fi

install-perl:
	@test -n "$(PERL_LIBDIR)" || { echo "no Perl library directory (PERL_LIBDIR)"; exit 1; }
	install -d $(DESTDIR)$(PERL_LIBDIR)/Apache/TestRLaaS
	install -m 644 $(KIT_PM) $(DESTDIR)$(PERL_LIBDIR)/Apache/
	install -m 644 $(KIT_SUB_PM) $(DESTDIR)$(PERL_LIBDIR)/Apache/TestRLaaS/

# Everything install put in place: the module (disabled first where
# a2dismod knows it), rlaas.load, rlaas.conf (even if changed: it is saved
# as rlaas.conf.saved) and the test kit.
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -e $(APACHE_CONFDIR)/mods-enabled/rlaas.load ] && \
	    command -v a2dismod >/dev/null 2>&1; then a2dismod -q rlaas; fi
	@if [ -e $(MODS_AVAILABLE)/rlaas.conf ] && \
	    ! cmp -s conf/rlaas.conf $(MODS_AVAILABLE)/rlaas.conf; then \
	    mv $(MODS_AVAILABLE)/rlaas.conf $(MODS_AVAILABLE)/rlaas.conf.saved; \
	    echo "your rlaas.conf is kept as $(MODS_AVAILABLE)/rlaas.conf.saved"; \
	fi
	rm -f $(DESTDIR)$(LIBEXECDIR)/mod_rlaas.so $(MODS_AVAILABLE)/rlaas.load \
	    $(MODS_AVAILABLE)/rlaas.conf
	rm -f $(foreach f,$(KIT_PM),$(DESTDIR)$(PERL_LIBDIR)/Apache/$(notdir $(f))) \
	    $(foreach f,$(KIT_SUB_PM),$(DESTDIR)$(PERL_LIBDIR)/Apache/TestRLaaS/$(notdir $(f)))
	-rmdir $(DESTDIR)$(PERL_LIBDIR)/Apache/TestRLaaS 2>/dev/null

# The Debian package libapache2-mod-rlaas (debian/), built from a copy of
# the tree so that nothing lands beside the checkout: build/deb/*.deb.
deb:
	sh tools/deb.sh build

# The package as a user meets it (as root; CI runs it): install, a2enmod,
# apachectl -t, a limit served, purge, nothing left behind.
deb-check:
	sh tools/deb.sh check

format:
	clang-format -i mod_rlaas.c $(filter-out $(GEN_SRC),$(SRC)) $(HDR) t/unit/*.c

clean:
	rm -rf .libs build *.la *.lo *.slo *.o $(foreach d,$(SRC_DIRS),$(d)/*.lo $(d)/*.slo $(d)/*.o $(d)/.libs $(d)/*.tmp) \
	    $(GEN_SRC)

# Further targets (sanitizers, fuzzing, valgrind, benchmark) live beside
# their tools in mk/.
-include $(wildcard mk/*.mk)
