/* The Cortex-M4 of an STM32MP15x (STM32MP157 Discovery kits, and boards like them), started by
 * Linux with remoteproc (its stm32_rproc driver) and commanded over RPMsg (rpmsg.c): /dev/ttyRPMSG<N>.
 * The wave is on PA14 (GPIO bank A, line 14; change WAVE_BANK and WAVE_LINE for another pin: Linux
 * must not drive it). Registers from ST's RM0436 reference manual (STM32MP157): RCC_MC_AHB4ENSETR
 * (0x50000000 + 0xAA8, the M4's enable of the GPIO banks' clocks), GPIO (bank A at 0x50002000, a
 * bank every 0x1000; MODER, BSRR), IPCC (0x4C001000; the M4 is processor 2: C2CR, C2MR, C2SCR,
 * C1TOC2SR, C2TOC1SR) with its "receive channel occupied" interrupt IPCC_RX1, number 103 on the
 * M4's NVIC. Linux's mailbox driver (stm32-ipcc) keeps the IPCC's clock on; ST's device trees give
 * the rings' channels: 1 kicks ring 0 (Linux receives), 2 kicks ring 1 (Linux sends). */
#include "core.h"
#include "cortex_m.h"
#include "rpmsg.h"
#include "stm32mp1-m4.h"

#define RCC_MC_AHB4ENSETR JL_REG(0x50000AA8u)
#define WAVE_BANK 0u /* A */
#define WAVE_LINE 14u
#define GPIO_BANK(n) (0x50002000u + 0x1000u * (n))
#define GPIO_MODER JL_REG(GPIO_BANK(WAVE_BANK) + 0x00u)
#define GPIO_BSRR JL_REG(GPIO_BANK(WAVE_BANK) + 0x18u)
#define MODER_OUTPUT 1u

#define IPCC 0x4C001000u
#define IPCC_C1TOC2SR JL_REG(IPCC + 0x0Cu) /* what Linux (processor 1) signalled us */
#define IPCC_C2CR JL_REG(IPCC + 0x10u)
#define IPCC_C2MR JL_REG(IPCC + 0x14u)
#define IPCC_C2SCR JL_REG(IPCC + 0x18u)
#define IPCC_C2TOC1SR JL_REG(IPCC + 0x1Cu) /* what we signalled Linux, until it takes it */
#define C2CR_RXOIE (1u << 0)
#define CH_BIT(channel) (1u << ((channel) - 1u)) /* channels 1..6: CHnF, CHnC, CHnOM */
#define CH_SET(channel) (1u << ((channel) + 15u)) /* CHnS, CHnFM */
#define IPCC_RX1_IRQ 103u

const struct jl_unit jl_unit = {"stm32mp1-m4", JL_TIMER_HZ, JL_MIN_RELOAD, JL_MAX_RELOAD};

void jl_unit_pin(int level) { GPIO_BSRR = level ? 1u << WAVE_LINE : 1u << (WAVE_LINE + 16u); }
void jl_unit_send(const char *line, uint32_t len) { jl_rpmsg_send(line, len); }

/* MCU SRAM is at the same addresses for Linux and the M4 (0x10000000 on both: ST's reserved-memory
 * for the rings and buffers, vdev0vring0/1 and vdev0buffer, lies there). */
void *jl_rpmsg_local(uint64_t address) { return (void *)(uintptr_t)address; }

void jl_rpmsg_kick(unsigned vring)
{
    unsigned channel = vring == 0 ? 1u : 2u;
    if (IPCC_C2TOC1SR & CH_BIT(channel))
        return; /* Linux has not taken the last kick yet: it reads the whole ring when it does */
    IPCC_C2SCR = CH_SET(channel);
}

static void ipcc_rx_isr(void)
{
    /* clear what Linux signalled: the main loop reads the rings whatever it was */
    IPCC_C2SCR = IPCC_C1TOC2SR & (CH_BIT(1) | CH_BIT(2));
}

int main(void)
{
    RCC_MC_AHB4ENSETR = 1u << WAVE_BANK;
    jl_unit_pin(0);
    /* read-modify-write of a register Linux may be changing for another line of the bank at the
     * same moment: ST's answer is a hardware semaphore (HSEM); a bank Linux leaves alone needs none */
    GPIO_MODER = (GPIO_MODER & ~(3u << (2u * WAVE_LINE))) | (MODER_OUTPUT << (2u * WAVE_LINE));
    IPCC_C2MR &= ~(CH_BIT(1) | CH_BIT(2)); /* their "occupied" interrupts unmasked */
    IPCC_C2CR |= C2CR_RXOIE;
    jl_nvic_enable(IPCC_RX1_IRQ);
    for (;;) {
        jl_rpmsg_poll();
        if (jl_core_poll())
            continue;
        jl_irq_off();
        if (!jl_core_waiting() && !jl_rpmsg_waiting())
            jl_wait_for_interrupt();
        jl_irq_on();
    }
}

JL_IRQ_VECTORS static const jl_vector irq_vectors[IPCC_RX1_IRQ + 1] = {
    [IPCC_RX1_IRQ] = ipcc_rx_isr,
};
