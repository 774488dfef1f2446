/* The start every Cortex-M unit shares: reset (the C runtime, then the unit's main), the wave's
 * timer (the SysTick: its interrupt ticks the core) and the first 16 entries of the vector table, as
 * the ARMv7-M Architecture Reference Manual lays it out: the stack's top, reset, the system
 * exceptions (a fault halts the unit where a debugger finds it). The unit's interrupts follow them
 * (cortex_m.h: JL_IRQ_VECTORS). */
#include "core.h"
#include "cortex_m.h"

/* The linker script's symbols: .data's load address and place, .bss, the stack's top. */
extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

int main(void);
void jl_reset(void);

void jl_unit_timer_start(uint32_t reload) { jl_systick_start(reload); }
void jl_unit_timer_stop(void) { jl_systick_stop(); }

void jl_reset(void)
{
    uint32_t *src = &_sidata;
    for (uint32_t *dst = &_sdata; dst < &_edata;)
        *dst++ = *src++;
    for (uint32_t *dst = &_sbss; dst < &_ebss;)
        *dst++ = 0;
    main();
}

static void systick_isr(void) { jl_core_tick(); }

static void halt(void)
{
    for (;;)
        jl_wait_for_interrupt();
}

__attribute__((section(".isr_vector"), used)) static const jl_vector system_vectors[16] = {
    [0] = (jl_vector)(uintptr_t)&_estack,
    [1] = jl_reset,
    [2] = halt,  /* NMI */
    [3] = halt,  /* HardFault */
    [4] = halt,  /* MemManage */
    [5] = halt,  /* BusFault */
    [6] = halt,  /* UsageFault */
    [11] = halt, /* SVCall */
    [14] = halt, /* PendSV */
    [15] = systick_isr,
};
