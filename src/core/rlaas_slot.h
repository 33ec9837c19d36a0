/*
 * Redis Cluster's key slots: CRC16 (XMODEM) of the key, or of its hash tag
 * (the part between the first '{' and the next '}', when not empty), modulo
 * 16384, as the Redis Cluster specification defines them. In cluster mode
 * the module writes the identity of every key as a hash tag, so that all
 * the keys of one identity (a strategy's state, every fixed window) are on
 * one node. No httpd headers.
 */
#ifndef RLAAS_SLOT_H
#define RLAAS_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define RLAAS_SLOTS 16384

uint16_t rlaas_crc16(const char *buf, size_t len);

/* The slot of a key, hash tag honoured. */
int rlaas_slot(const char *key, size_t len);

#endif
