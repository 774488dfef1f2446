/* switch-latency: how long a higher-priority task that becomes runnable waits before it runs,
 * while lower-priority tasks occupy the CPU (task-switch / preemption latency).
 *
 * N SCHED_FIFO threads on one CPU, thread i at priority prio+i. Every interval thread 0 wakes
 * up and starts a chain: each thread, while it runs, takes a timestamp and posts the semaphore
 * of the next (higher-priority) one, which must preempt it at once; the woken thread takes its
 * own timestamp first thing, and the difference is one sample. A chain of N threads gives N-1
 * samples. A waker that gets back from sem_post before the thread it woke has run was not
 * preempted (counted: with SCHED_FIFO on one CPU this must not happen). With --busy-cpus,
 * SCHED_OTHER threads spin on those CPUs (the hyperthread siblings) for the whole run.
 *
 * Output (--out, written whole at the end):
 *   # jitterlab-switch v1 threads=N cpu=C prio=P policy=fifo|other
 *   one sample in ns per line
 *   # end cycles=X samples=Y not_preempted=Z dropped=D busy_loops=B
 */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "sw_common.h"

#define PROG "switch-latency"
#define MAX_THREADS 64
#define MAX_BUSY 64
#define STACK_BYTES (256 * 1024) /* locked with mlockall: small, so RLIMIT_MEMLOCK holds them */
#define USAGE "usage: %s --threads N --cpu C --prio P --interval-ns N --duration-ns N " \
              "--warmup-ns N --out PATH [--busy-cpus C,C...] [--allow-no-rt]\n"

struct hop {
    sem_t go;
    int64_t posted_ns;      /* set by the waker just before sem_post */
    atomic_int ran;         /* set by this thread when it runs */
};

static struct hop hops[MAX_THREADS];
static int n_threads, cpu, prio, allow_no_rt, realtime = 1;
static int64_t interval_ns = -1, duration_ns = -1, warmup_ns = -1;
static const char *out_path;
static int busy_cpu[MAX_BUSY], n_busy;

static int64_t *samples;
static size_t cap;
static atomic_size_t n_samples;
static atomic_ullong dropped, not_preempted, busy_loops;
static atomic_int recording, finished;
static uint64_t cycles;

static void usage_exit(const char *why)
{
    fprintf(stderr, "%s: %s\n" USAGE, PROG, why, PROG);
    exit(2);
}

static int parse_cpus(const char *s)
{
    char *copy = strdup(s), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int64_t n;
        if (n_busy == MAX_BUSY || sw_parse_int(tok, 0, CPU_SETSIZE - 1, &n) != 0) {
            free(copy);
            return -1;
        }
        busy_cpu[n_busy++] = (int)n;
    }
    free(copy);
    return 0;
}

static void parse_args(int argc, char **argv)
{
    int64_t threads = -1, c = -1, p = -1;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--allow-no-rt") == 0) {
            allow_no_rt = 1;
            continue;
        }
        if (i + 1 >= argc)
            usage_exit("missing value or unknown flag");
        const char *val = argv[++i];
        int ok;
        if (strcmp(flag, "--threads") == 0)
            ok = sw_parse_int(val, 2, MAX_THREADS, &threads) == 0;
        else if (strcmp(flag, "--cpu") == 0)
            ok = sw_parse_int(val, 0, CPU_SETSIZE - 1, &c) == 0;
        else if (strcmp(flag, "--prio") == 0)
            ok = sw_parse_int(val, 1, 99, &p) == 0;
        else if (strcmp(flag, "--interval-ns") == 0)
            ok = sw_parse_int(val, 1000, INT64_MAX, &interval_ns) == 0;
        else if (strcmp(flag, "--duration-ns") == 0)
            ok = sw_parse_int(val, 1, INT64_MAX, &duration_ns) == 0;
        else if (strcmp(flag, "--warmup-ns") == 0)
            ok = sw_parse_int(val, 0, INT64_MAX, &warmup_ns) == 0;
        else if (strcmp(flag, "--out") == 0)
            ok = (out_path = val) != NULL;
        else if (strcmp(flag, "--busy-cpus") == 0)
            ok = parse_cpus(val) == 0;
        else
            ok = 0;
        if (!ok) {
            fprintf(stderr, "%s: bad flag or value: %s %s\n" USAGE, PROG, flag, val, PROG);
            exit(2);
        }
    }
    if (threads < 0 || c < 0 || p < 0 || interval_ns < 0 || duration_ns < 0 || warmup_ns < 0 || !out_path)
        usage_exit("every flag but --busy-cpus and --allow-no-rt is required");
    if (p + threads - 1 > 99)
        usage_exit("--prio + --threads - 1 must stay <= 99 (each thread one priority higher)");
    n_threads = (int)threads, cpu = (int)c, prio = (int)p;
}

/* Pin the calling thread to one CPU and give it its policy; 0 or an errno. */
static int place(int on_cpu, int policy, int priority)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(on_cpu, &set);
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (err != 0)
        return err;
    struct sched_param sp = {.sched_priority = policy == SCHED_OTHER ? 0 : priority};
    return pthread_setschedparam(pthread_self(), policy, &sp);
}

static void record(int64_t ns)
{
    if (!atomic_load(&recording))
        return;
    size_t i = atomic_fetch_add(&n_samples, 1);
    if (i < cap)
        samples[i] = ns;
    else
        atomic_fetch_add(&dropped, 1);
}

/* Wake thread `next` and see whether it ran before we got back (it must have: it outranks us). */
static void wake(int next)
{
    atomic_store(&hops[next].ran, 0);
    hops[next].posted_ns = sw_now_ns();
    sem_post(&hops[next].go);
    if (!atomic_load(&hops[next].ran) && atomic_load(&recording) && !atomic_load(&finished))
        atomic_fetch_add(&not_preempted, 1);
}

static void *chain_thread(void *arg)
{
    int i = (int)(intptr_t)arg;
    for (;;) {
        while (sem_wait(&hops[i].go) != 0 && errno == EINTR)
            ;
        int64_t now = sw_now_ns();
        if (atomic_load(&finished))
            return NULL;
        atomic_store(&hops[i].ran, 1);
        record(now - hops[i].posted_ns);
        if (i + 1 < n_threads)
            wake(i + 1);
    }
}

static void *busy_thread(void *arg)
{
    (void)arg;
    unsigned long long loops = 0;
    while (!atomic_load_explicit(&finished, memory_order_relaxed))
        loops++;
    atomic_fetch_add(&busy_loops, loops);
    return NULL;
}

static void start(pthread_t *t, void *(*fn)(void *), void *arg, int on_cpu, int policy, int priority)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK_BYTES);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(on_cpu, &set);
    pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, policy);
    struct sched_param sp = {.sched_priority = policy == SCHED_OTHER ? 0 : priority};
    pthread_attr_setschedparam(&attr, &sp);
    int err = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        fprintf(stderr, "%s: cannot start a thread on CPU %d: %s\n", PROG, on_cpu, strerror(err));
        exit(1);
    }
}

static int write_output(void)
{
    struct sw_file w;
    if (sw_file_open(&w, PROG, "output ", out_path) != 0)
        return -1;
    setvbuf(w.f, NULL, _IOFBF, 1 << 20);
    size_t n = atomic_load(&n_samples);
    if (n > cap)
        n = cap;
    fprintf(w.f, "# jitterlab-switch v1 threads=%d cpu=%d prio=%d policy=%s\n", n_threads, cpu, prio,
            realtime ? "fifo" : "other");
    for (size_t i = 0; i < n; i++)
        fprintf(w.f, "%lld\n", (long long)samples[i]);
    fprintf(w.f, "# end cycles=%llu samples=%zu not_preempted=%llu dropped=%llu busy_loops=%llu\n",
            (unsigned long long)cycles, n, (unsigned long long)atomic_load(&not_preempted),
            (unsigned long long)atomic_load(&dropped), (unsigned long long)atomic_load(&busy_loops));
    return sw_file_commit(&w);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    uint64_t want = (uint64_t)(duration_ns / interval_ns + 2) * (uint64_t)(n_threads - 1);
    cap = want < SW_MAX_LOGGED_EDGES ? (size_t)want : SW_MAX_LOGGED_EDGES;
    samples = sw_alloc_prefaulted(cap * sizeof *samples);
    if (samples == NULL)
        sw_die(PROG, "cannot allocate the sample buffer", NULL);
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
        if (!allow_no_rt)
            sw_die(PROG, "mlockall (pass --allow-no-rt to run without)", NULL);
        fprintf(stderr, "warning: %s: mlockall: %s; page faults may add to the latency\n", PROG,
                strerror(errno));
    }
    int err = place(cpu, SCHED_FIFO, prio);
    if (err == EINVAL) {
        fprintf(stderr, "%s: cannot run on CPU %d: %s\n", PROG, cpu, strerror(err));
        return 2;
    }
    if (err != 0) {
        if (!allow_no_rt) {
            fprintf(stderr, "%s: SCHED_FIFO refused (%s); pass --allow-no-rt to run as SCHED_OTHER\n",
                    PROG, strerror(err));
            return 3;
        }
        fprintf(stderr, "warning: %s: SCHED_FIFO refused (%s); running SCHED_OTHER\n", PROG, strerror(err));
        realtime = 0;
        place(cpu, SCHED_OTHER, 0);
    }
    sw_install_stop_handlers();
    int policy = realtime ? SCHED_FIFO : SCHED_OTHER;
    pthread_t chain[MAX_THREADS], busy[MAX_BUSY];
    for (int i = 1; i < n_threads; i++) {
        sem_init(&hops[i].go, 0, 0);
        start(&chain[i], chain_thread, (void *)(intptr_t)i, cpu, policy, prio + i);
    }
    for (int i = 0; i < n_busy; i++)
        start(&busy[i], busy_thread, NULL, busy_cpu[i], SCHED_OTHER, 0);
    /* thread 0 is this one: every interval it starts a chain, then sleeps */
    const int64_t begin = sw_now_ns();
    int64_t next = begin;
    while (!sw_stop_requested) {
        next += interval_ns;
        if (next - begin > warmup_ns + duration_ns || sw_sleep_until(next))
            break;
        atomic_store(&recording, next - begin > warmup_ns);
        if (atomic_load(&recording))
            cycles++;
        wake(1);
    }
    atomic_store(&recording, 0);
    atomic_store(&finished, 1);
    for (int i = 1; i < n_threads; i++) {
        sem_post(&hops[i].go);
        pthread_join(chain[i], NULL);
    }
    for (int i = 0; i < n_busy; i++)
        pthread_join(busy[i], NULL);
    munlockall();
    return write_output() == 0 ? 0 : 1;
}
