// SPDX-License-Identifier: GPL-2.0
/*
 * jl_wave: the kernel-space programming models of jitterlab's square-wave benchmark.
 *
 * Toggles one GPIO line (found by its chip's label and offset, requested through the GPIO
 * consumer API) every half period for a duration, in one of three ways:
 *   mode=busy     a kernel thread busy-waits between toggles (ndelay granularity);
 *   mode=hrtimer  an hrtimer callback toggles, absolute expiries (no drift), hard-irq context;
 *   mode=rt       a SCHED_FIFO kernel thread sleeps on an absolute hrtimeout and toggles.
 * Every edge is timestamped with ktime_get_ns() (CLOCK_MONOTONIC) right after the write; the
 * edges are read back from /proc/jl_wave in the "# jitterlab-edges v1" format of every impl,
 * and /proc/jl_wave_state says "running" or "done". Unloading stops everything and frees the line.
 */
#include <linux/delay.h>
#include <linux/gpio/consumer.h>
#include <linux/gpio/driver.h>
#include <linux/gpio/machine.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/sched.h>
#include <uapi/linux/sched/types.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/version.h>
#include <linux/vmalloc.h>

static unsigned long period_ns = 1000000;
module_param(period_ns, ulong, 0444);
MODULE_PARM_DESC(period_ns, "nominal period of the wave (ns, >= 2000)");
static unsigned long duration_ns = 1000000000;
module_param(duration_ns, ulong, 0444);
MODULE_PARM_DESC(duration_ns, "how long to make the wave (ns)");
static char *mode = "hrtimer";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "busy, hrtimer or rt");
static char *chip = "";
module_param(chip, charp, 0444);
MODULE_PARM_DESC(chip, "label of the GPIO chip");
static int line = -1;
module_param(line, int, 0444);
MODULE_PARM_DESC(line, "offset of the line on the chip");
static int prio = 80;
module_param(prio, int, 0444);
MODULE_PARM_DESC(prio, "SCHED_FIFO priority of the rt and busy threads (1-99)");
static char *impl = "kmod";
module_param(impl, charp, 0444);
MODULE_PARM_DESC(impl, "the impl's name written in the edge log");

static struct gpio_desc *desc;
static u64 *edges;
static size_t max_edges, n_edges;
static unsigned long dropped;
static atomic_t done = ATOMIC_INIT(0);
static int level;
static u64 start_ns, deadline_ns;
static struct task_struct *thread;
static struct hrtimer timer;
static bool timer_used;

static void edge(int value)
{
	gpiod_set_value(desc, value);
	if (n_edges < max_edges)
		edges[n_edges++] = ktime_get_ns();
	else
		dropped++;
}

/* The next edge; false once the duration is over (the line is left low). */
static bool step(void)
{
	if (ktime_get_ns() - start_ns >= duration_ns && level == 0)
		return false;
	level ^= 1;
	edge(level);
	return true;
}

static enum hrtimer_restart on_timer(struct hrtimer *t)
{
	if (!step()) {
		atomic_set(&done, 1);
		return HRTIMER_NORESTART;
	}
	hrtimer_forward(t, hrtimer_get_expires(t), ns_to_ktime(period_ns / 2));
	return HRTIMER_RESTART;
}

static int run_thread(void *data)
{
	const bool busy = data != NULL;
	u64 next = start_ns;

	while (!kthread_should_stop()) {
		if (!step())
			break;
		next += period_ns / 2;
		if (busy) {
			while (ktime_get_ns() < next && !kthread_should_stop())
				ndelay(100);
		} else {
			ktime_t at = ns_to_ktime(next);

			set_current_state(TASK_UNINTERRUPTIBLE);
			schedule_hrtimeout_range(&at, 0, HRTIMER_MODE_ABS);
		}
	}
	atomic_set(&done, 1);
	while (!kthread_should_stop()) { /* kthread_stop() reaps us on unload */
		set_current_state(TASK_INTERRUPTIBLE);
		schedule();
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 7, 0)
static int match_label(struct gpio_chip *gc, void *data)
{
	return gc->label && strcmp(gc->label, data) == 0;
}
#endif

static struct gpio_desc *request_line(void)
{
	struct gpio_chip *gc;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	struct gpio_device *gdev = gpio_device_find_by_label(chip);
	struct gpio_desc *d;

	if (!gdev)
		return ERR_PTR(-ENODEV);
	gc = gpio_device_get_chip(gdev);
	d = gpiochip_request_own_desc(gc, line, "jitterlab", GPIO_ACTIVE_HIGH, GPIOD_OUT_LOW);
	gpio_device_put(gdev);
	return d;
#else
	gc = gpiochip_find(chip, match_label);
	if (!gc)
		return ERR_PTR(-ENODEV);
	return gpiochip_request_own_desc(gc, line, "jitterlab", GPIO_ACTIVE_HIGH, GPIOD_OUT_LOW);
#endif
}

static int edges_show(struct seq_file *m, void *v)
{
	size_t i;

	if (!atomic_read(&done))
		return -EBUSY; /* read once the wave is over: the log is whole then */
	seq_printf(m, "# jitterlab-edges v1 clock=monotonic impl=%s\n", impl);
	for (i = 0; i < n_edges; i++)
		seq_printf(m, "%llu %d\n", edges[i], i % 2 == 0 ? 1 : 0);
	if (dropped)
		seq_printf(m, "# dropped=%lu\n", dropped);
	seq_printf(m, "# end edges=%zu\n", n_edges);
	return 0;
}

static int state_show(struct seq_file *m, void *v)
{
	seq_puts(m, atomic_read(&done) ? "done\n" : "running\n");
	return 0;
}

static int __init jl_wave_init(void)
{
	int err;

	if (period_ns < 2000 || line < 0 || !chip[0] || prio < 1 || prio > 99) {
		pr_err("jl_wave: need period_ns >= 2000, chip=LABEL line=N, prio 1-99\n");
		return -EINVAL;
	}
	if (strcmp(mode, "busy") && strcmp(mode, "hrtimer") && strcmp(mode, "rt")) {
		pr_err("jl_wave: mode must be busy, hrtimer or rt, not %s\n", mode);
		return -EINVAL;
	}
	max_edges = min_t(u64, 2 * (duration_ns / (period_ns / 2)) + 16, 16u << 20);
	edges = vmalloc(max_edges * sizeof(*edges));
	if (!edges)
		return -ENOMEM;
	desc = request_line();
	if (IS_ERR(desc)) {
		err = PTR_ERR(desc);
		pr_err("jl_wave: cannot request line %d of chip \"%s\": %d\n", line, chip, err);
		goto free_edges;
	}
	if (!strcmp(mode, "hrtimer") && gpiod_cansleep(desc)) {
		pr_err("jl_wave: chip \"%s\" may sleep: an hrtimer callback cannot drive it (use mode=rt)\n",
		       chip);
		err = -EINVAL;
		goto free_line;
	}
	if (!proc_create_single("jl_wave", 0444, NULL, edges_show) ||
	    !proc_create_single("jl_wave_state", 0444, NULL, state_show)) {
		err = -ENOMEM;
		goto free_proc;
	}
	level = 1;
	start_ns = ktime_get_ns();
	deadline_ns = start_ns + duration_ns;
	edge(1);
	if (!strcmp(mode, "hrtimer")) {
		hrtimer_init(&timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_HARD);
		timer.function = on_timer;
		timer_used = true;
		hrtimer_start(&timer, ns_to_ktime(start_ns + period_ns / 2), HRTIMER_MODE_ABS_HARD);
		return 0;
	}
	thread = kthread_run(run_thread, strcmp(mode, "busy") ? NULL : (void *)1, "jl_wave_%s", mode);
	if (IS_ERR(thread)) {
		err = PTR_ERR(thread);
		thread = NULL;
		goto free_proc;
	}
	{
		struct sched_attr attr = { .size = sizeof(attr), .sched_policy = SCHED_FIFO,
					   .sched_priority = prio };
		sched_setattr_nocheck(thread, &attr);
	}
	return 0;

free_proc:
	remove_proc_entry("jl_wave_state", NULL);
	remove_proc_entry("jl_wave", NULL);
free_line:
	gpiochip_free_own_desc(desc);
free_edges:
	vfree(edges);
	return err;
}

static void __exit jl_wave_exit(void)
{
	if (timer_used)
		hrtimer_cancel(&timer);
	if (thread)
		kthread_stop(thread);
	gpiod_set_value(desc, 0);
	remove_proc_entry("jl_wave_state", NULL);
	remove_proc_entry("jl_wave", NULL);
	gpiochip_free_own_desc(desc);
	vfree(edges);
}

module_init(jl_wave_init);
module_exit(jl_wave_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("jitterlab: square wave on a GPIO line from kernel space (busy, hrtimer, rt)");
