// SPDX-License-Identifier: GPL-2.0
/*
 * jl_vgpio: the virtual GPIO chip of jitterlab's VM lab.
 *
 * A gpio_chip labelled "jl-vgpio" whose lines come in loopback pairs, like a wire on a board:
 * line 2k is an output, line 2k+1 an input that follows it. Setting line 2k changes the level of
 * line 2k+1 and, when an edge interrupt is requested on it, raises that interrupt through
 * gpiolib's irqchip, so the GPIO character device timestamps the edge in its hard-irq handler
 * exactly as for a real input line. Every consumer path of real hardware runs: sysfs export, the
 * character device (libgpiod, gpiomon), and the kernel's gpiod consumer API.
 *
 * set() may be called from any context (an hrtimer callback toggles in hard-irq context), so
 * the chip does not sleep, its state is under a raw spinlock, and the interrupt is delivered with
 * generic_handle_domain_irq_safe() after the lock is released (the handler may read the line).
 *
 * It is a test fixture: timing measured through it in an emulated guest is not hardware timing.
 */
#include <linux/bitmap.h>
#include <linux/gpio/driver.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/irqdesc.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#define JL_VGPIO_MAX_LINES 64

static unsigned int lines = 4;
module_param(lines, uint, 0444);
MODULE_PARM_DESC(lines, "number of lines, even (pairs: 2k drives 2k+1), 2 to 64 (default 4)");

struct jl_vgpio {
	struct gpio_chip gc;
	raw_spinlock_t lock;
	DECLARE_BITMAP(value, JL_VGPIO_MAX_LINES);	/* level of each output line */
	DECLARE_BITMAP(output, JL_VGPIO_MAX_LINES);	/* even lines set as outputs */
	DECLARE_BITMAP(irq_on, JL_VGPIO_MAX_LINES);	/* unmasked edge interrupts */
	unsigned int irq_type[JL_VGPIO_MAX_LINES];
};

static struct platform_device *jl_pdev;
static struct jl_vgpio *jl_chip;

static bool is_input(unsigned int offset)
{
	return offset & 1;
}

static int jl_get(struct gpio_chip *gc, unsigned int offset)
{
	struct jl_vgpio *vg = gpiochip_get_data(gc);
	unsigned long flags;
	int level;

	raw_spin_lock_irqsave(&vg->lock, flags);
	/* an input reads the output it is wired to */
	level = test_bit(is_input(offset) ? offset - 1 : offset, vg->value);
	raw_spin_unlock_irqrestore(&vg->lock, flags);
	return level;
}

/* the edge interrupt a change of `driver` to `level` raises on its input, or -1 */
static int edge_to_raise(struct jl_vgpio *vg, unsigned int driver, int level)
{
	unsigned int input = driver + 1;
	unsigned int want = level ? IRQ_TYPE_EDGE_RISING : IRQ_TYPE_EDGE_FALLING;

	if (input >= vg->gc.ngpio || !test_bit(input, vg->irq_on))
		return -1;
	return (vg->irq_type[input] & want) ? (int)input : -1;
}

static void jl_set(struct gpio_chip *gc, unsigned int offset, int level)
{
	struct jl_vgpio *vg = gpiochip_get_data(gc);
	unsigned long flags;
	int raise = -1;

	if (is_input(offset))
		return;
	raw_spin_lock_irqsave(&vg->lock, flags);
	if (test_bit(offset, vg->value) != !!level) {
		assign_bit(offset, vg->value, level);
		raise = edge_to_raise(vg, offset, level);
	}
	raw_spin_unlock_irqrestore(&vg->lock, flags);
	if (raise >= 0)
		generic_handle_domain_irq_safe(gc->irq.domain, raise);
}

static int jl_get_direction(struct gpio_chip *gc, unsigned int offset)
{
	struct jl_vgpio *vg = gpiochip_get_data(gc);

	return test_bit(offset, vg->output) ? GPIO_LINE_DIRECTION_OUT : GPIO_LINE_DIRECTION_IN;
}

static int jl_direction_input(struct gpio_chip *gc, unsigned int offset)
{
	struct jl_vgpio *vg = gpiochip_get_data(gc);
	unsigned long flags;

	raw_spin_lock_irqsave(&vg->lock, flags);
	clear_bit(offset, vg->output);
	raw_spin_unlock_irqrestore(&vg->lock, flags);
	return 0;
}

static int jl_direction_output(struct gpio_chip *gc, unsigned int offset, int level)
{
	struct jl_vgpio *vg = gpiochip_get_data(gc);
	unsigned long flags;

	if (is_input(offset))
		return -EPERM;	/* the far end of a wire: it follows line offset - 1 */
	raw_spin_lock_irqsave(&vg->lock, flags);
	set_bit(offset, vg->output);
	raw_spin_unlock_irqrestore(&vg->lock, flags);
	jl_set(gc, offset, level);
	return 0;
}

static void jl_irq_mask(struct irq_data *d)
{
	struct gpio_chip *gc = irq_data_get_irq_chip_data(d);
	struct jl_vgpio *vg = gpiochip_get_data(gc);
	irq_hw_number_t hwirq = irqd_to_hwirq(d);

	clear_bit(hwirq, vg->irq_on);
	gpiochip_disable_irq(gc, hwirq);
}

static void jl_irq_unmask(struct irq_data *d)
{
	struct gpio_chip *gc = irq_data_get_irq_chip_data(d);
	struct jl_vgpio *vg = gpiochip_get_data(gc);
	irq_hw_number_t hwirq = irqd_to_hwirq(d);

	gpiochip_enable_irq(gc, hwirq);
	set_bit(hwirq, vg->irq_on);
}

static int jl_irq_set_type(struct irq_data *d, unsigned int type)
{
	struct gpio_chip *gc = irq_data_get_irq_chip_data(d);
	struct jl_vgpio *vg = gpiochip_get_data(gc);
	irq_hw_number_t hwirq = irqd_to_hwirq(d);

	if (type & ~IRQ_TYPE_EDGE_BOTH)
		return -EINVAL;	/* edges only: a level interrupt would fire without end */
	vg->irq_type[hwirq] = type;
	return 0;
}

static const struct irq_chip jl_irq_chip = {
	.name = "jl-vgpio",
	.irq_mask = jl_irq_mask,
	.irq_unmask = jl_irq_unmask,
	.irq_set_type = jl_irq_set_type,
	.flags = IRQCHIP_IMMUTABLE | IRQCHIP_SKIP_SET_WAKE,
	GPIOCHIP_IRQ_RESOURCE_HELPERS,
};

static int __init jl_vgpio_init(void)
{
	struct gpio_irq_chip *girq;
	int ret;

	if (lines < 2 || lines > JL_VGPIO_MAX_LINES || lines % 2) {
		pr_err("jl_vgpio: lines=%u: give an even number from 2 to %d\n", lines, JL_VGPIO_MAX_LINES);
		return -EINVAL;
	}
	jl_pdev = platform_device_register_simple("jl-vgpio", PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(jl_pdev))
		return PTR_ERR(jl_pdev);
	jl_chip = kzalloc(sizeof(*jl_chip), GFP_KERNEL);
	if (!jl_chip) {
		ret = -ENOMEM;
		goto fail;
	}
	raw_spin_lock_init(&jl_chip->lock);
	jl_chip->gc = (struct gpio_chip){
		.label = "jl-vgpio",
		.parent = &jl_pdev->dev,
		.owner = THIS_MODULE,
		.base = -1,
		.ngpio = lines,
		.can_sleep = false,
		.get = jl_get,
		.set = jl_set,
		.get_direction = jl_get_direction,
		.direction_input = jl_direction_input,
		.direction_output = jl_direction_output,
	};
	girq = &jl_chip->gc.irq;
	gpio_irq_chip_set_chip(girq, &jl_irq_chip);
	girq->handler = handle_simple_irq;
	girq->default_type = IRQ_TYPE_NONE;
	ret = gpiochip_add_data(&jl_chip->gc, jl_chip);
	if (ret)
		goto fail;
	pr_info("jl_vgpio: %u lines, pairs 2k -> 2k+1\n", lines);
	return 0;
fail:
	kfree(jl_chip);
	platform_device_unregister(jl_pdev);
	return ret;
}

static void __exit jl_vgpio_exit(void)
{
	gpiochip_remove(&jl_chip->gc);
	kfree(jl_chip);
	platform_device_unregister(jl_pdev);
}

module_init(jl_vgpio_init);
module_exit(jl_vgpio_exit);
MODULE_DESCRIPTION("jitterlab VM lab: a virtual GPIO chip of loopback pairs");
MODULE_LICENSE("GPL");
