/*
 * trace-events: the scheduler, IRQ, softirq, hrtimer and gpio events of a trace-cmd .dat file as
 * fixed rows jitterlab reads with numpy (jitterlab/model/trace.py: EVENT_DTYPE, Kind).
 *
 *   trace-events FILE.dat ROWS NAMES
 *
 * ROWS: a 16-byte header ("JLTRACE1", the row size twice) and one row per event, in time
 * order across CPUs (libtracecmd merges them). NAMES: the interned names (commands, IRQ handlers),
 * NUL-terminated, index 0 the empty name. Events lost before a record (the ring buffer's overrun)
 * become a LOST row. The file is read through libtracecmd and libtraceevent: no parser of the ring
 * buffer here. Exit status 2 with one line on stderr when the file cannot be read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <trace-cmd.h>

enum kind {
	K_SWITCH = 1, K_WAKING, K_WAKEUP, K_MIGRATE, K_IRQ_ENTRY, K_IRQ_EXIT, K_SOFTIRQ_ENTRY,
	K_SOFTIRQ_EXIT, K_HRTIMER_START, K_HRTIMER_EXPIRE_ENTRY, K_HRTIMER_EXPIRE_EXIT, K_GPIO_VALUE,
	K_LOST, K_MARK, K_COUNT
};

struct row {
	int64_t time_ns, timer, expires_ns, soft_ns;
	int32_t pid, prio, prev_pid, prev_prio, number, number2;
	uint32_t name, prev_name;
	uint16_t cpu;
	uint8_t kind, pad;
	uint32_t pad2;
};
_Static_assert(sizeof(struct row) == 72, "struct row must match EVENT_DTYPE");

/* Where a field of the row comes from, per kind: NULL when the event has no such field. */
struct source {
	struct tep_event *event;
	struct tep_format_field *pid, *prio, *name, *prev_pid, *prev_prio, *prev_name, *number, *number2,
		*timer, *expires, *soft;
};

static const struct {
	enum kind kind;
	const char *system, *event;
	const char *pid, *prio, *name, *prev_pid, *prev_prio, *prev_name, *number, *number2, *timer,
		*expires, *soft;
} WANTED[] = {
	{K_SWITCH, "sched", "sched_switch", "next_pid", "next_prio", "next_comm", "prev_pid", "prev_prio",
	 "prev_comm", "prev_state", NULL, NULL, NULL, NULL},
	{K_WAKING, "sched", "sched_waking", "pid", "prio", "comm", NULL, NULL, NULL, "target_cpu", NULL,
	 NULL, NULL, NULL},
	{K_WAKEUP, "sched", "sched_wakeup", "pid", "prio", "comm", NULL, NULL, NULL, "target_cpu", NULL,
	 NULL, NULL, NULL},
	{K_MIGRATE, "sched", "sched_migrate_task", "pid", "prio", "comm", NULL, NULL, NULL, "dest_cpu",
	 "orig_cpu", NULL, NULL, NULL},
	{K_IRQ_ENTRY, "irq", "irq_handler_entry", NULL, NULL, "name", NULL, NULL, NULL, "irq", NULL, NULL,
	 NULL, NULL},
	{K_IRQ_EXIT, "irq", "irq_handler_exit", NULL, NULL, NULL, NULL, NULL, NULL, "irq", "ret", NULL, NULL,
	 NULL},
	{K_SOFTIRQ_ENTRY, "irq", "softirq_entry", NULL, NULL, NULL, NULL, NULL, NULL, "vec", NULL, NULL, NULL,
	 NULL},
	{K_SOFTIRQ_EXIT, "irq", "softirq_exit", NULL, NULL, NULL, NULL, NULL, NULL, "vec", NULL, NULL, NULL,
	 NULL},
	{K_HRTIMER_START, "timer", "hrtimer_start", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "hrtimer",
	 "expires", "softexpires"},
	{K_HRTIMER_EXPIRE_ENTRY, "timer", "hrtimer_expire_entry", NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, "hrtimer", "now", NULL},
	{K_HRTIMER_EXPIRE_EXIT, "timer", "hrtimer_expire_exit", NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, "hrtimer", NULL, NULL},
	{K_GPIO_VALUE, "gpio", "gpio_value", NULL, NULL, NULL, NULL, NULL, NULL, "gpio", "value", NULL, NULL,
	 NULL},
	/* what was written to trace_marker: the recorder marks its start and stop */
	{K_MARK, "ftrace", "print", NULL, NULL, "buf", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
#define N_WANTED (sizeof(WANTED) / sizeof(WANTED[0]))

/* Names interned in an open-addressing table; the texts are written to NAMES as they first come. */
struct names {
	char **text;
	uint32_t *slot; /* index + 1, 0 = empty */
	size_t count, capacity, slots;
	FILE *out;
};

struct reader {
	struct tep_handle *tep;
	struct source by_kind[K_COUNT];
	int kind_of_id[65536]; /* event id -> kind (0: not wanted) */
	struct names names;
	FILE *rows;
	uint64_t count;
	int failed;
};

static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

static int grow(struct names *t)
{
	size_t slots = t->slots ? t->slots * 2 : 1024;
	uint32_t *slot = calloc(slots, sizeof(*slot));
	char **text = realloc(t->text, slots / 2 * sizeof(*text));
	if (!slot || !text) {
		free(slot);
		return -1;
	}
	t->text = text;
	t->capacity = slots / 2;
	for (size_t i = 0; i < t->count; i++) {
		uint64_t h = hash(t->text[i], strlen(t->text[i])) & (slots - 1);
		while (slot[h])
			h = (h + 1) & (slots - 1);
		slot[h] = (uint32_t)i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->slots = slots;
	return 0;
}

static uint32_t intern(struct reader *r, const char *s, size_t n)
{
	struct names *t = &r->names;
	n = strnlen(s, n);
	if (n == 0)
		return 0;
	if (t->count + 1 > t->capacity && grow(t) < 0) {
		r->failed = ENOMEM;
		return 0;
	}
	uint64_t h = hash(s, n) & (t->slots - 1);
	while (t->slot[h]) {
		const char *have = t->text[t->slot[h] - 1];
		if (strlen(have) == n && memcmp(have, s, n) == 0)
			return t->slot[h] - 1;
		h = (h + 1) & (t->slots - 1);
	}
	char *copy = strndup(s, n);
	if (!copy) {
		r->failed = ENOMEM;
		return 0;
	}
	t->text[t->count] = copy;
	t->slot[h] = (uint32_t)t->count + 1;
	fwrite(copy, 1, n + 1, t->out);
	return (uint32_t)t->count++;
}

static long long number(struct tep_format_field *f, struct tep_record *rec)
{
	unsigned long long v = 0;
	if (!f || tep_read_number_field(f, rec->data, &v) < 0)
		return 0;
	/* sign-extend the signed fields narrower than 64 bits */
	if ((f->flags & TEP_FIELD_IS_SIGNED) && f->size < 8) {
		unsigned long long sign = 1ULL << (f->size * 8 - 1);
		v &= (sign << 1) - 1;
		return (long long)((v ^ sign) - sign);
	}
	return (long long)v;
}

static uint32_t text(struct reader *r, struct source *s, struct tep_format_field *f, struct tep_record *rec)
{
	int len = 0;
	if (!f)
		return 0;
	const char *p = tep_get_field_raw(NULL, s->event, f->name, rec, &len, 0);
	if (p && len == 0 && f->size == 0 && rec->size > f->offset) { /* char buf[]: to the record's end */
		len = (int)strnlen(p, (size_t)(rec->size - f->offset));
		while (len > 0 && p[len - 1] == '\n') /* the kernel ends a mark with a newline */
			len--;
	}
	return p && len > 0 ? intern(r, p, (size_t)len) : 0;
}

static void put(struct reader *r, const struct row *row)
{
	if (fwrite(row, sizeof(*row), 1, r->rows) != 1)
		r->failed = errno ? errno : EIO;
	r->count++;
}

static int each(struct tracecmd_input *handle, struct tep_record *rec, int cpu, void *data)
{
	(void)handle;
	struct reader *r = data;
	if (rec->missed_events) {
		struct row lost = {.time_ns = (int64_t)rec->ts, .cpu = (uint16_t)cpu, .kind = K_LOST,
				   .number = rec->missed_events > 0 ? (int32_t)rec->missed_events : -1};
		put(r, &lost);
	}
	int id = tep_data_type(r->tep, rec);
	int kind = id >= 0 && id < 65536 ? r->kind_of_id[id] : 0;
	if (!kind)
		return r->failed ? -1 : 0;
	struct source *s = &r->by_kind[kind];
	struct row row = {
		.time_ns = (int64_t)rec->ts,
		.timer = number(s->timer, rec),
		.expires_ns = number(s->expires, rec),
		.soft_ns = number(s->soft, rec),
		.pid = (int32_t)number(s->pid, rec),
		.prio = (int32_t)number(s->prio, rec),
		.prev_pid = s->prev_pid ? (int32_t)number(s->prev_pid, rec) : tep_data_pid(r->tep, rec),
		.prev_prio = (int32_t)number(s->prev_prio, rec),
		.number = (int32_t)number(s->number, rec),
		.number2 = (int32_t)number(s->number2, rec),
		.name = text(r, s, s->name, rec),
		.prev_name = text(r, s, s->prev_name, rec),
		.cpu = (uint16_t)cpu,
		.kind = (uint8_t)kind,
	};
	put(r, &row);
	return r->failed ? -1 : 0;
}

static struct tep_format_field *field(struct tep_event *e, const char *name)
{
	return name ? tep_find_field(e, name) : NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s FILE.dat ROWS NAMES\n", argv[0]);
		return 2;
	}
	tracecmd_set_loglevel(TEP_LOG_NONE);
	struct tracecmd_input *handle = tracecmd_open(argv[1], TRACECMD_FL_LOAD_NO_PLUGINS |
						      TRACECMD_FL_LOAD_NO_SYSTEM_PLUGINS);
	if (!handle) {
		fprintf(stderr, "%s: not a trace-cmd file libtracecmd can read\n", argv[1]);
		return 2;
	}
	static struct reader r;
	r.tep = tracecmd_get_tep(handle);
	for (size_t i = 0; i < N_WANTED; i++) {
		struct tep_event *e = tep_find_event_by_name(r.tep, WANTED[i].system, WANTED[i].event);
		if (!e || e->id < 0 || e->id >= 65536)
			continue;
		struct source *s = &r.by_kind[WANTED[i].kind];
		s->event = e;
		s->pid = field(e, WANTED[i].pid);
		s->prio = field(e, WANTED[i].prio);
		s->name = field(e, WANTED[i].name);
		s->prev_pid = field(e, WANTED[i].prev_pid);
		s->prev_prio = field(e, WANTED[i].prev_prio);
		s->prev_name = field(e, WANTED[i].prev_name);
		s->number = field(e, WANTED[i].number);
		s->number2 = field(e, WANTED[i].number2);
		s->timer = field(e, WANTED[i].timer);
		s->expires = field(e, WANTED[i].expires);
		s->soft = field(e, WANTED[i].soft);
		r.kind_of_id[e->id] = WANTED[i].kind;
	}
	r.rows = fopen(argv[2], "wb");
	r.names.out = fopen(argv[3], "wb");
	if (!r.rows || !r.names.out || grow(&r.names) < 0) {
		fprintf(stderr, "cannot write %s or %s: %s\n", argv[2], argv[3], strerror(errno));
		return 2;
	}
	static char rows_buffer[1 << 20];
	setvbuf(r.rows, rows_buffer, _IOFBF, sizeof(rows_buffer));
	fputc('\0', r.names.out); /* index 0: the empty name */
	r.names.text[0] = strdup("");
	r.names.count = 1;
	uint32_t size = sizeof(struct row);
	uint64_t count = 0;
	fwrite("JLTRACE1", 1, 8, r.rows);
	fwrite(&size, sizeof(size), 1, r.rows);
	fwrite(&size, sizeof(size), 1, r.rows); /* reserved: the row size again */
	if (tracecmd_iterate_events(handle, NULL, 0, each, &r) < 0 && !r.failed) {
		fprintf(stderr, "%s: its events could not be read to the end\n", argv[1]);
		return 2;
	}
	count = r.count;
	if (r.failed || fflush(r.rows) || fclose(r.rows) || fclose(r.names.out)) {
		fprintf(stderr, "writing the events of %s failed: %s\n", argv[1], strerror(r.failed ? r.failed : errno));
		return 2;
	}
	tracecmd_close(handle);
	printf("%llu\n", (unsigned long long)count);
	return 0;
}
