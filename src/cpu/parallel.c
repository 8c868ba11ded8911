/* The CPU reference's one parallel loop: items of independent work (output rows)
 * dealt out to threads in small chunks, so that rows of unequal cost (a causal
 * mask's last rows see the most keys) still keep every thread busy. Each item
 * runs the same plain code whichever thread takes it, so results do not depend
 * on the thread count. Large references are the bench's verification and the
 * GPU check's tests (verifying a 4096^3 matmul took 25 s on one core of the
 * H200's host), and the CPU backend is the fallback without a Vulkan device. */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

/* A thread is worth starting for this many multiply-adds (about 4 ms). */
#define WORK_PER_THREAD (1 << 22)
#define MOST_THREADS 64

typedef struct parallel_loop {
    cpu_range_fn body;
    void *arg;
    int64_t items, chunk;
    atomic_int_fast64_t next;
} parallel_loop;

typedef struct worker {
    parallel_loop *loop;
    int index;
} worker;

/* VKATTN_CPU_THREADS=N: N threads whatever the work (0 or not a number: the
 * default); within 1..MOST_THREADS. */
static int threads_asked(void)
{
    const char *env = getenv("VKATTN_CPU_THREADS");
    if (!env || !*env)
        return 0;
    char *end;
    long n = strtol(env, &end, 10);
    return *end != '\0' || n <= 0 ? 0 : n > MOST_THREADS ? MOST_THREADS : (int)n;
}

int cpu_threads_for(int64_t items, double work)
{
    int n = threads_asked();
    if (n == 0) {   /* one a CPU online, as many as the work keeps busy */
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        double by_work = work / WORK_PER_THREAD;
        n = online < 1 ? 1 : online > MOST_THREADS ? MOST_THREADS : (int)online;
        if (by_work < n)
            n = by_work < 1.0 ? 1 : (int)by_work;
    }
    if (items < n)
        n = items < 1 ? 1 : (int)items;
    return n;
}

static void *run_worker(void *p)
{
    worker *w = p;
    parallel_loop *loop = w->loop;
    for (;;) {
        int64_t begin = atomic_fetch_add(&loop->next, loop->chunk);
        if (begin >= loop->items)
            break;
        int64_t end = begin + loop->chunk < loop->items ? begin + loop->chunk : loop->items;
        loop->body(loop->arg, w->index, begin, end);
    }
    return NULL;
}

void cpu_parallel_for(int threads, int64_t items, cpu_range_fn body, void *arg)
{
    parallel_loop loop = {.body = body, .arg = arg, .items = items};
    threads = threads < 1 ? 1 : threads > MOST_THREADS ? MOST_THREADS : threads;
    /* Sixteen chunks a thread: small enough to even out unequal rows, large
     * enough that taking one costs nothing beside its work. */
    loop.chunk = items / ((int64_t)threads * 16);
    if (loop.chunk < 1)
        loop.chunk = 1;
    atomic_init(&loop.next, 0);
    worker workers[MOST_THREADS];
    pthread_t ids[MOST_THREADS];
    bool started[MOST_THREADS] = {false};
    /* A thread that cannot be started leaves its chunks to the others (the
     * calling thread, worker 0, always runs). */
    for (int t = 1; t < threads; t++) {
        workers[t] = (worker){&loop, t};
        started[t] = pthread_create(&ids[t], NULL, run_worker, &workers[t]) == 0;
    }
    workers[0] = (worker){&loop, 0};
    run_worker(&workers[0]);
    for (int t = 1; t < threads; t++)
        if (started[t])
            pthread_join(ids[t], NULL);
}
