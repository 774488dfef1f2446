// SPDX-License-Identifier: GPL-2.0
/*
 * jl_irqoff: while loaded, a kernel thread ("jl-irqoff") bound to one CPU keeps interrupts off
 * there for off_us, then sleeps every_ms, again and again: a disturbance of known cause, size
 * and place. A timer due on that CPU while interrupts are off fires only when they are back on,
 * so a traced program there is late with cause "timer", the task that ran being this thread.
 * /sys/module/jl_irqoff/parameters/holds counts the times interrupts were held off, and
 * longest_ns is the longest of them on the monotonic clock (at least off_us; longer when the CPU
 * itself was stopped during a hold, as an emulated guest's is when its host is busy).
 * Unloading stops the thread (at most one hold and one sleep later).
 */
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/irqflags.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>

static unsigned int off_us = 3000;
module_param(off_us, uint, 0444);
MODULE_PARM_DESC(off_us, "how long interrupts stay off each time (us, 1..100000)");
static unsigned int every_ms = 50;
module_param(every_ms, uint, 0444);
MODULE_PARM_DESC(every_ms, "sleep between two holds (ms, 1..10000)");
static int cpu = 1;
module_param(cpu, int, 0444);
MODULE_PARM_DESC(cpu, "the CPU whose interrupts are held off");
static unsigned long holds;
module_param(holds, ulong, 0444);
MODULE_PARM_DESC(holds, "how many times interrupts were held off (read only)");
static unsigned long longest_ns;
module_param(longest_ns, ulong, 0444);
MODULE_PARM_DESC(longest_ns, "the longest time interrupts were held off (ns, read only)");

static struct task_struct *thread;

/*
 * Spins on the monotonic clock, the trace's: udelay's calibrated loop is off by a factor of
 * three in an emulated guest (a 3 ms udelay held interrupts off 1 ms under qemu TCG).
 */
static void spin_us(unsigned int us)
{
	u64 end = ktime_get_ns() + (u64)us * NSEC_PER_USEC;

	while (ktime_get_ns() < end)
		cpu_relax();
}

static int hold(void *unused)
{
	(void)unused;
	while (!kthread_should_stop()) {
		unsigned long flags;
		u64 held_ns;

		local_irq_save(flags);
		held_ns = ktime_get_ns();
		spin_us(off_us);
		held_ns = ktime_get_ns() - held_ns;
		local_irq_restore(flags);
		WRITE_ONCE(holds, holds + 1);
		if (held_ns > longest_ns)
			WRITE_ONCE(longest_ns, held_ns);
		/* kthread_stop() wakes the thread out of this sleep */
		schedule_timeout_interruptible(msecs_to_jiffies(every_ms));
	}
	return 0;
}

static int __init jl_irqoff_init(void)
{
	if (off_us < 1 || off_us > 100000 || every_ms < 1 || every_ms > 10000)
		return -EINVAL;
	if (cpu < 0 || cpu >= nr_cpu_ids || !cpu_online(cpu))
		return -EINVAL;
	thread = kthread_create(hold, NULL, "jl-irqoff");
	if (IS_ERR(thread))
		return PTR_ERR(thread);
	kthread_bind(thread, cpu);
	wake_up_process(thread);
	return 0;
}

static void __exit jl_irqoff_exit(void)
{
	kthread_stop(thread);
}

module_init(jl_irqoff_init);
module_exit(jl_irqoff_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("jitterlab test disturbance: interrupts held off on one CPU for a known time");
