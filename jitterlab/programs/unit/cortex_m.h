/* What every Cortex-M unit shares: the SysTick timer, the NVIC's enable registers, the interrupt
 * mask and the sleep instruction, as the ARMv7-M Architecture Reference Manual (ARM DDI 0403,
 * B3.3 SysTick, B3.4 NVIC) gives them; and the vector table's layout (its start: cortex_m.c). */
#ifndef JL_CORTEX_M_H
#define JL_CORTEX_M_H

#include <stdint.h>

#define JL_REG(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

#define SYST_CSR JL_REG(0xE000E010u) /* control and status */
#define SYST_RVR JL_REG(0xE000E014u) /* reload value (24 bits) */
#define SYST_CVR JL_REG(0xE000E018u) /* current value */
#define SYST_CSR_ENABLE (1u << 0)
#define SYST_CSR_TICKINT (1u << 1)
#define SYST_CSR_CLKSOURCE (1u << 2) /* the processor clock */
#define SYST_MAX_RELOAD 0x00FFFFFFu
#define ICSR JL_REG(0xE000ED04u)
#define ICSR_PENDSTCLR (1u << 25)
#define NVIC_ISER(n) JL_REG(0xE000E100u + 4u * (n))
#define VTOR JL_REG(0xE000ED08u)

static inline void jl_irq_off(void) { __asm volatile("cpsid i" ::: "memory"); }
static inline void jl_irq_on(void) { __asm volatile("cpsie i" ::: "memory"); }
static inline void jl_wait_for_interrupt(void) { __asm volatile("dsb\n\twfi" ::: "memory"); }

static inline void jl_nvic_enable(unsigned irq) { NVIC_ISER(irq / 32u) = 1u << (irq % 32u); }

/* The SysTick counts the processor clock: an interrupt every `reload` ticks. */
static inline void jl_systick_start(uint32_t reload)
{
    SYST_CSR = 0;
    SYST_RVR = reload - 1u;
    SYST_CVR = 0;
    SYST_CSR = SYST_CSR_ENABLE | SYST_CSR_TICKINT | SYST_CSR_CLKSOURCE;
}

static inline void jl_systick_stop(void)
{
    SYST_CSR = 0;
    ICSR = ICSR_PENDSTCLR;
}

/* An entry of the vector table. cortex_m.c gives the first 16; a unit gives its interrupts' in one
 * JL_IRQ_VECTORS array, which its linker script places right after them (KEEP(*(.isr_vector))
 * KEEP(*(.isr_vector.irq))), so that the array's entry n is interrupt n's. */
typedef void (*jl_vector)(void);
#define JL_IRQ_VECTORS __attribute__((section(".isr_vector.irq"), used))

#endif
