/*
 * Unit test of admission by expected time (src/serve/budget.c): a new job
 * is judged by the slow end of the last jobs, not their mean, because a
 * page's cost ranges over a factor of ten (the soak in docs/BENCHMARKS.md:
 * admitted by the mean, 37 accepted requests ran past their deadline).
 */
#include <math.h>

#include "../soft_check.h"
#include "serve/budget.h"

static int near(double a, double b) { return fabs(a - b) < 1e-9; }

int main(void)
{
    serve_budget b;
    serve_budget_init(&b, (size_t)1 << 30);
    CHECK(near(serve_budget_expected_s(&b, 3, 2), 0), "nothing measured: %g", serve_budget_expected_s(&b, 3, 2));

    /* the first jobs: the mean and the slowest one (decaying) speak */
    serve_budget_job_done(&b, 2.0);
    CHECK(near(serve_budget_expected_s(&b, 0, 2), 2.0), "one job of 2 s: %g", serve_budget_expected_s(&b, 0, 2));

    /* 60 jobs of 1 s and 4 of 10 s, the slow ones first: the mean forgets
     * them, the 95th percentile of the last 64 does not */
    serve_budget_destroy(&b);
    serve_budget_init(&b, (size_t)1 << 30);
    for (int i = 0; i < 4; i++) serve_budget_job_done(&b, 10.0);
    for (int i = 0; i < 60; i++) serve_budget_job_done(&b, 1.0);
    CHECK(b.service_s < 1.01, "the mean after 60 fast jobs: %g", b.service_s);
    CHECK(near(serve_budget_expected_s(&b, 0, 2), 10.0), "idle worker: its own time at the slow end, not %g",
          serve_budget_expected_s(&b, 0, 2));
    CHECK(near(serve_budget_expected_s(&b, 1, 2), 10.0), "one busy of two: a worker is free, not %g",
          serve_budget_expected_s(&b, 1, 2));
    CHECK(near(serve_budget_expected_s(&b, 2, 2), 15.0), "both busy: half a job's wait, then its own, not %g",
          serve_budget_expected_s(&b, 2, 2));
    CHECK(near(serve_budget_expected_s(&b, 2, 1), 30.0), "one worker, two ahead: three jobs, not %g",
          serve_budget_expected_s(&b, 2, 1));

    /* 64 more fast jobs push the slow ones out of the window */
    for (int i = 0; i < 64; i++) serve_budget_job_done(&b, 1.0);
    CHECK(serve_budget_expected_s(&b, 0, 2) < 1.01, "the slow jobs left the window: %g",
          serve_budget_expected_s(&b, 0, 2));
    serve_budget_destroy(&b);

    /* shedding when a worker takes a job: the soak's 504s were jobs admitted
     * with time to spare that waited in the queue longer than expected */
    serve_budget_init(&b, (size_t)1 << 30);
    CHECK(!serve_budget_shed(&b, 0.5, 30), "nothing measured: a job runs");
    for (int i = 0; i < 64; i++) serve_budget_job_done(&b, i < 60 ? 2.0 : 12.0);
    CHECK(serve_budget_shed(&b, 5.0, 30), "5 s left, 12 s at the slow end: answered 503, not run into a 504");
    CHECK(!serve_budget_shed(&b, 20.0, 30), "20 s left for a 12 s job: it runs");
    CHECK(!serve_budget_shed(&b, 5.0, 10), "a job slower than a whole deadline runs (the measurement is suspect)");
    serve_budget_destroy(&b);
    /* 2 slow jobs in 64: under the 95th percentile (2 s), but a job that
     * starts with 5 s left could be the next 12 s one */
    serve_budget_init(&b, (size_t)1 << 30);
    for (int i = 0; i < 64; i++) serve_budget_job_done(&b, i % 32 == 31 ? 12.0 : 2.0);
    CHECK(serve_budget_expected_s(&b, 0, 1) < 5.0, "admission's own time (95th percentile or mean): %g",
          serve_budget_expected_s(&b, 0, 1));
    CHECK(serve_budget_shed(&b, 5.0, 30), "5 s left, the slowest of the last jobs 12 s: shed");
    CHECK(!serve_budget_shed(&b, 13.0, 30), "13 s left: it runs");
    serve_budget_destroy(&b);
    return soft_check_exit("serve.admission: by the slow end of the last jobs");
}
