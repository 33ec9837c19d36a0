/*
 * The client address as the ip source names it. No httpd headers: unit-
 * tested and fuzzed on its own.
 *
 * IPv4 addresses are used whole, in dotted form; so are IPv4-mapped IPv6
 * addresses (::ffff:a.b.c.d), which are IPv4 clients on a dual-stack
 * socket. An IPv6 client is grouped by its network: one household or VM
 * holds a whole /64 (RLaaSIPv6Prefix), so each of its addresses must be the
 * same client. The network is written as the groups the prefix covers, in
 * lowercase hex without leading zeros, bits past the prefix set to 0,
 * joined with '-', then '_' and the prefix length:
 *   2001:db8:1:2:aaaa::1 /64   -> 2001-db8-1-2_64
 *   2001:db8:1:2:aaaa::1 /56   -> 2001-db8-1-0_56
 *   2001:db8:1:2:aaaa::1 /128  -> 2001-db8-1-2-aaaa-0-0-1_128
 * Neither form holds ':', so both are key text as they are (rlaas_key.h
 * calls them address-like).
 */
#ifndef RLAAS_IP_H
#define RLAAS_IP_H

#include <stddef.h>

#define RLAAS_IPV6_PREFIX_MIN     32
#define RLAAS_IPV6_PREFIX_MAX     128
#define RLAAS_IPV6_PREFIX_DEFAULT 64

/* Longest rendering, NUL included: 8 groups of 4, 7 '-', "_128". */
#define RLAAS_IP_TEXT_MAX 44

/* Writes the name of the client at addr (len bytes, a textual IPv4 or IPv6
 * address; an IPv6 zone such as "%eth0" is ignored) into out (room for
 * RLAAS_IP_TEXT_MAX bytes, NUL-terminated) and returns its length; 0 if
 * addr is not an address or v6prefix is out of 32..128. */
size_t rlaas_ip_render(char *out, const char *addr, size_t len, int v6prefix);

#endif
