/* Checking a received permutation in place, without scratch memory. */
#include "deepreduce.h"

#define SEEN 0x80000000u

int dr_permutation_check(uint32_t *perm, size_t n)
{
    size_t i;
    int st = DR_OK;
    if (n > (size_t)SEEN || (n > 0 && perm == NULL))
        return DR_E_ARG;
    /* Range first, before any mark: an entry arriving with its top bit set would
     * otherwise read as a mark, and clearing the marks would change it. */
    for (i = 0; i < n; i++)
        if (perm[i] >= n)
            return DR_E_CORRUPT;
    /* Entry v seen: the top bit of perm[v] set (entries are below n <= 2^31, so their own
     * top bits are free); every bit set here is cleared again below. */
    for (i = 0; i < n && st == DR_OK; i++) {
        uint32_t v = perm[i] & ~SEEN;
        if ((perm[v] & SEEN) != 0)
            st = DR_E_CORRUPT;
        else
            perm[v] |= SEEN;
    }
    for (i = 0; i < n; i++)
        perm[i] &= ~SEEN;
    return st;
}
