/*
 * The module's version: shown at start-up (RLAAS0003), in the server's
 * version string (ServerTokens Full, mod_info), as the metric
 * rlaas_build_info, and by the Debian package (debian/changelog), which
 * `make deb` checks against this line.
 */
#ifndef RLAAS_VERSION_H
#define RLAAS_VERSION_H

#define RLAAS_VERSION "0.9.0"

#endif
