/*
 * Tests for the memory plan of src/ops: passes served from one slab.
 *
 * Every buffer handed out is filled with its own value and checked, whole,
 * before it is freed and again at the end: two live buffers that share a
 * byte cannot both keep their values.  Counts of backend allocations come
 * from svp_ops_mem_stats().
 */
#include "ops/ops.h"
#include "ops/ops_plan.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static svp_ops_h ops;

static void arena_setup(void)
{
    svp_ops_params_t params = {.backend = SVP_OPS_BACKEND_CPU, .threads = 1};

    cr_assert_eq(svp_ops_create(&params, &ops), SVP_OK);
}

static void arena_teardown(void)
{
    svp_ops_destroy(ops);
}

#define ARENA_MAX_LIVE 64

typedef struct {
    float *buf;
    size_t count;
    float  value;
} arena_buf_t;

typedef struct {
    arena_buf_t live[ARENA_MAX_LIVE];
    int         n;
    float       next_value;
} arena_set_t;

static void arena_take(arena_set_t *s, size_t count)
{
    arena_buf_t *b = &s->live[s->n++];
    size_t       i;

    cr_assert_lt(s->n, ARENA_MAX_LIVE);
    cr_assert_eq(svp_ops_alloc(ops, count, &b->buf), SVP_OK);
    b->count = count;
    b->value = s->next_value;
    s->next_value += 1.0f;
    for (i = 0; i < count; i++) {
        b->buf[i] = b->value;
    }
}

static void arena_check(const arena_buf_t *b)
{
    size_t i;

    for (i = 0; i < b->count; i++) {
        cr_assert_eq(b->buf[i], b->value,
                     "buffer of value %g (%zu floats) "
                     "overwritten at %zu: %g",
                     b->value, b->count, i, b->buf[i]);
    }
}

/* Checks and frees the k-th live buffer. */
static void arena_give(arena_set_t *s, int k)
{
    cr_assert_lt(k, s->n);
    arena_check(&s->live[k]);
    svp_ops_free(ops, s->live[k].buf);
    s->live[k] = s->live[--s->n];
}

static void arena_give_all(arena_set_t *s)
{
    int k;

    for (k = 0; k < s->n; k++) {
        arena_check(&s->live[k]);
    }
    while (s->n > 0) {
        arena_give(s, s->n - 1);
    }
}

static uint64_t arena_rand(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

/*
 * One pass of a model-like program, the same for a seed: buffers of a few
 * sizes taken and given back in a seeded order, up to ~12 alive at once.
 */
static void arena_pass(const char *name, uint64_t seed, int steps)
{
    static const size_t sizes[] = {4096, 1000, 16384, 333, 8192, 64, 5000};
    arena_set_t         s       = {.n = 0, .next_value = 1.0f};
    uint64_t            st      = seed;
    int64_t             dims[1] = {(int64_t)seed};
    int                 i;

    svp_ops_pass_begin(ops, name, 1, dims);
    for (i = 0; i < steps; i++) {
        uint64_t r = arena_rand(&st);

        if (s.n > 0 && (s.n >= 12 || r % 3 == 0)) {
            arena_give(&s, (int)(arena_rand(&st) % s.n));
        } else {
            arena_take(&s, sizes[r % (sizeof(sizes) / sizeof(sizes[0]))]);
        }
    }
    arena_give_all(&s);
    svp_ops_pass_end(ops);
}

static svp_ops_mem_stats_t arena_stats(void)
{
    svp_ops_mem_stats_t st;

    svp_ops_mem_stats(ops, &st);
    return st;
}

/*
 * The first pass of a kind records it; the slab made at its end serves
 * every later one with no backend allocation, and holds about what was
 * ever alive at once (the exact-size reuse it replaces held several times
 * that on such a program).
 */
Test(arena, pass_replays_from_slab, .init = arena_setup, .fini = arena_teardown)
{
    svp_ops_mem_stats_t first, st;
    int                 pass;

    arena_pass("model", 7, 400);
    first = arena_stats();
    cr_assert_gt(first.slab_bytes, 0);
    cr_assert_eq(first.live_bytes, 0);
    /* the recording's buffers went back: the slab is all that is held */
    cr_assert_eq(first.reserved_bytes, first.slab_bytes);
    cr_assert_geq(first.slab_bytes, first.pass_peak_bytes);
    cr_assert_leq((double)first.slab_bytes, 1.15 * first.pass_peak_bytes,
                  "slab %zu bytes for a peak of %zu", first.slab_bytes,
                  first.pass_peak_bytes);
    cr_log_info("slab %zu bytes, pass peak %zu (%.3f)", first.slab_bytes,
                first.pass_peak_bytes,
                (double)first.slab_bytes / first.pass_peak_bytes);
    for (pass = 0; pass < 3; pass++) {
        svp_ops_mem_reset_peak(ops);
        arena_pass("model", 7, 400);
        st = arena_stats();
        cr_assert_eq(st.backend_allocs, first.backend_allocs,
                     "pass %d: %llu backend allocations after warm-up", pass,
                     (unsigned long long)(st.backend_allocs - first.backend_allocs));
        cr_assert_eq(st.reserved_bytes, first.reserved_bytes);
        cr_assert_leq(st.peak_live_bytes, st.slab_bytes);
    }
}

/*
 * Another sequence under the same name and shape (a plan that no longer
 * fits): served correctly outside the slab, and planned anew, so that
 * the pass after it allocates nothing again.
 */
Test(arena, changed_sequence_replans, .init = arena_setup, .fini = arena_teardown)
{
    svp_ops_mem_stats_t warm, st;
    int64_t             dims[1] = {7};
    arena_set_t         s       = {.n = 0, .next_value = 1.0f};

    arena_pass("model", 7, 400);
    arena_pass("model", 7, 400);
    warm = arena_stats();

    /* same kind, other program: a request other than the plan's */
    svp_ops_pass_begin(ops, "model", 1, dims);
    arena_take(&s, 4096);
    arena_take(&s, 777);
    arena_take(&s, 100000);
    arena_take(&s, 4096);
    arena_give(&s, 1);
    arena_take(&s, 20000);
    arena_give_all(&s);
    svp_ops_pass_end(ops);
    st = arena_stats();
    cr_assert_eq(st.live_bytes, 0);

    /* the new program is now the plan */
    warm = arena_stats();
    svp_ops_pass_begin(ops, "model", 1, dims);
    arena_take(&s, 4096);
    arena_take(&s, 777);
    arena_take(&s, 100000);
    arena_take(&s, 4096);
    arena_give(&s, 1);
    arena_take(&s, 20000);
    arena_give_all(&s);
    svp_ops_pass_end(ops);
    st = arena_stats();
    cr_assert_eq(st.backend_allocs, warm.backend_allocs);
    cr_assert_eq(st.reserved_bytes, warm.reserved_bytes);
}

/*
 * The same sizes, freed in another order: the plan put c where a was,
 * since a was freed before c was asked for; here a is still alive then.
 * c must not land on a.
 */
Test(arena, same_sizes_other_lifetimes, .init = arena_setup, .fini = arena_teardown)
{
    arena_set_t s = {.n = 0, .next_value = 1.0f};
    int         round;

    for (round = 0; round < 2; round++) {
        svp_ops_pass_begin(ops, "lifetimes", 0, NULL);
        arena_take(&s, 1000); /* a */
        arena_take(&s, 1000); /* b */
        arena_give(&s, 0);    /* a: live[0] is b now */
        arena_take(&s, 1000); /* c */
        arena_give_all(&s);
        svp_ops_pass_end(ops);
    }
    svp_ops_pass_begin(ops, "lifetimes", 0, NULL);
    arena_take(&s, 1000); /* a */
    arena_take(&s, 1000); /* b */
    arena_give(&s, 1);    /* b, not a */
    arena_take(&s, 1000); /* c: a is alive */
    cr_assert_neq(s.live[0].buf, s.live[1].buf);
    arena_give_all(&s);
    svp_ops_pass_end(ops);
    cr_assert_eq(arena_stats().live_bytes, 0);
}

/*
 * Kinds of passes share the slab: it is sized for the largest, and
 * alternating kinds (UNet, VAE, CLIP) allocate nothing once each has run.
 * A buffer taken before any pass (a weight) and one that outlives its pass
 * (an output) keep their values throughout.
 */
Test(arena, kinds_share_the_slab, .init = arena_setup, .fini = arena_teardown)
{
    svp_ops_mem_stats_t big, warm, st;
    arena_set_t         keep    = {.n = 0, .next_value = 1000.0f};
    int64_t             dims[1] = {1};
    int                 round;

    arena_take(&keep, 12345); /* a weight */
    arena_pass("big", 11, 600);
    big = arena_stats();
    arena_pass("small", 3, 40);
    st = arena_stats();
    cr_assert_eq(st.slab_bytes, big.slab_bytes,
                 "the slab grew for a smaller "
                 "pass: %zu -> %zu",
                 big.slab_bytes, st.slab_bytes);

    for (round = 0; round < 3; round++) {
        if (round == 1) {
            warm = arena_stats();
        }
        arena_pass("small", 3, 40);
        arena_pass("big", 11, 600);
        /* an output: taken in the pass, freed after it */
        svp_ops_pass_begin(ops, "output", 1, dims);
        arena_take(&keep, 2222);
        svp_ops_pass_end(ops);
        arena_check(&keep.live[0]);
        arena_give(&keep, 1);
    }
    st = arena_stats();
    cr_assert_eq(st.backend_allocs, warm.backend_allocs);
    cr_assert_eq(st.reserved_bytes, warm.reserved_bytes);
    arena_give_all(&keep);
    cr_assert_eq(arena_stats().live_bytes, 0);
}

/* Passes nest: only the outermost one is planned. */
Test(arena, passes_nest, .init = arena_setup, .fini = arena_teardown)
{
    svp_ops_mem_stats_t warm, st;
    int                 round;

    for (round = 0; round < 3; round++) {
        if (round == 2) {
            warm = arena_stats();
        }
        svp_ops_pass_begin(ops, "outer", 0, NULL);
        arena_pass("inner", 5, 100);
        arena_pass("inner", 9, 100);
        svp_ops_pass_end(ops);
    }
    st = arena_stats();
    cr_assert_eq(st.backend_allocs, warm.backend_allocs);
}

/*
 * The placement itself, on random lifetimes: buffers alive together never
 * share a float, the slab holds the peak, and the greedy rule stays near it.
 */
Test(arena, placement_is_disjoint)
{
    enum { N = 300 };
    svp_ops_plan_buf_t bufs[N];
    svp_ops_plan_t     plan = {bufs, N, 0, 0};
    uint64_t           st   = 42;
    size_t             i, j;
    uint32_t           t = 0;

    for (i = 0; i < N; i++) {
        bufs[i].count = 1 + arena_rand(&st) % 50000;
        bufs[i].first = t;
        t += 2;
        /* a tenth never freed: they get no place */
        bufs[i].last = (i % 10 == 9)
                           ? UINT32_MAX
                           : bufs[i].first + 1 + 2 * (arena_rand(&st) % 40);
    }
    cr_assert_eq(svp_ops_plan_place(&plan), SVP_OK);
    for (i = 0; i < N; i++) {
        size_t ai = svp_ops_plan_aligned(bufs[i].count);

        if (bufs[i].last == UINT32_MAX) {
            cr_assert_eq(bufs[i].offset, SVP_OPS_PLAN_NONE);
            continue;
        }
        cr_assert_eq(bufs[i].offset % SVP_OPS_PLAN_ALIGN, 0);
        cr_assert_leq(bufs[i].offset + ai, plan.size);
        for (j = i + 1; j < N; j++) {
            size_t aj = svp_ops_plan_aligned(bufs[j].count);

            if (bufs[j].last == UINT32_MAX || bufs[i].last <= bufs[j].first ||
                bufs[j].last <= bufs[i].first) {
                continue;
            }
            cr_assert(bufs[i].offset + ai <= bufs[j].offset ||
                          bufs[j].offset + aj <= bufs[i].offset,
                      "buffers %zu and %zu are alive together and overlap", i, j);
        }
    }
    cr_assert_geq(plan.size, plan.peak);
    cr_log_info("random lifetimes: slab %zu floats, peak %zu (%.3f)", plan.size,
                plan.peak, (double)plan.size / plan.peak);
    cr_assert_leq((double)plan.size, 1.25 * plan.peak);
}

/*
 * While a kind is recorded, the arena holds what is in use and nothing
 * more: freed buffers go back at once, and the slab of the kinds planned
 * before is given back until the recording ends.
 */
Test(arena, recording_holds_what_is_live, .init = arena_setup,
     .fini = arena_teardown)
{
    arena_set_t         s = {.n = 0, .next_value = 1.0f};
    svp_ops_mem_stats_t st;
    uint64_t            r = 5;
    int                 i;

    arena_pass("before", 3, 200);
    cr_assert_gt(arena_stats().slab_bytes, 0);
    svp_ops_pass_begin(ops, "new", 0, NULL);
    for (i = 0; i < 300; i++) {
        if (s.n > 0 && (s.n >= 10 || arena_rand(&r) % 3 == 0)) {
            arena_give(&s, (int)(arena_rand(&r) % s.n));
        } else {
            arena_take(&s, 100 + arena_rand(&r) % 20000);
        }
        st = arena_stats();
        cr_assert_eq(st.reserved_bytes, st.live_bytes,
                     "step %d: %zu bytes held for %zu in use", i, st.reserved_bytes,
                     st.live_bytes);
    }
    arena_give_all(&s);
    svp_ops_pass_end(ops);
    st = arena_stats();
    /* one slab again, for the larger of the two plans */
    cr_assert_eq(st.reserved_bytes, st.slab_bytes);
    cr_assert_eq(st.live_bytes, 0);
}

/*
 * A buffer kept from outside a pass that a recording borrows stays kept:
 * the next request for it outside a pass finds it without the backend.
 */
Test(arena, kept_buffers_stay_kept, .init = arena_setup, .fini = arena_teardown)
{
    arena_set_t         s = {.n = 0, .next_value = 1.0f};
    svp_ops_mem_stats_t kept, st;

    arena_take(&s, 7777); /* a latent, outside any pass */
    arena_give(&s, 0);
    kept = arena_stats();
    svp_ops_pass_begin(ops, "borrows", 0, NULL);
    arena_take(&s, 7777);
    arena_give(&s, 0);
    svp_ops_pass_end(ops);
    arena_take(&s, 7777);
    st = arena_stats();
    cr_assert_eq(st.backend_allocs, kept.backend_allocs + 1,
                 "%llu backend allocations: the kept buffer was given back",
                 (unsigned long long)(st.backend_allocs - kept.backend_allocs));
    arena_give_all(&s);
}
