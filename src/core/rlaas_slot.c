#include "rlaas_slot.h"

#include <string.h>

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, computed bit
 * by bit; keys are short, and the table this would save is not worth its
 * cache lines on the request path. */
uint16_t rlaas_crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    size_t i;
    int b;

    for (i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021)
                                 : (uint16_t)(crc << 1);
    }
    return crc;
}

int rlaas_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);

    if (open != NULL) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);

        /* "{}" and no '}' hash the whole key */
        if (close != NULL && close > open + 1)
            return rlaas_crc16(open + 1, (size_t)(close - open - 1)) %
                   RLAAS_SLOTS;
    }
    return rlaas_crc16(key, len) % RLAAS_SLOTS;
}
