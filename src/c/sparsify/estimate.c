/* The threshold search shared by dgc and adaq (see estimate.h). */
#include "estimate.h"
#include "size_math.h"

size_t dr_sp_sample_size(size_t n)
{
    return n / 100u > 1u ? n / 100u : 1u;
}

int dr_sp_kth_largest(const float *v, size_t m, size_t kk, uint32_t *idx, float *out)
{
    float least;
    size_t j;
    int st = dr_topk(v, m, kk, idx);
    if (st != DR_OK)
        return st;
    least = v[idx[0]];
    for (j = 1; j < kk; j++)
        least = v[idx[j]] < least ? v[idx[j]] : least;
    *out = least;
    return DR_OK;
}

size_t dr_sp_scaled_rank(size_t t, size_t m, size_t n)
{
    size_t r = (size_t)((double)t * (double)m / (double)n + 0.5);
    return r < 1u ? 1u : (r > m ? m : r);
}

void dr_sp_band(size_t t, size_t *lo, size_t *hi)
{
    size_t slack = t / 10u * 3u + t % 10u * 3u / 10u; /* floor(0.3 t), without 3 t */
    *lo = t - slack;
    *hi = dr_size_add(t, slack);
}

void dr_sp_search_init(dr_sp_search *s)
{
    s->below = s->above = 0.0f;
    s->have_below = s->have_above = 0;
}

float dr_sp_search_next(dr_sp_search *s, float thr, size_t c, size_t hi)
{
    if (c > hi) {
        s->below = thr;
        s->have_below = 1;
        if (!s->have_above)
            /* A zero threshold takes every entry, and 1.3*0 stays 0: step to the
             * smallest positive float, which leaves out exactly the zeros. */
            return thr > 0.0f ? thr * 1.3f : DR_SP_LEAST_POSITIVE;
    } else {
        s->above = thr;
        s->have_above = 1;
        if (!s->have_below)
            return thr * 0.7f;
    }
    return s->below + (s->above - s->below) * 0.5f;
}
