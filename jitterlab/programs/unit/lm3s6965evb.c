/* The unit qemu emulates as "lm3s6965evb": a Luminary Micro (TI) Stellaris LM3S6965, Cortex-M3.
 * The wave is on PF0 (GPIO port F, line 0: qemu's PL061 "luminary" block, whose output levels it
 * traces as pl061_set_output events); commands come over UART0 (a PL011) by receive interrupt.
 * Registers from TI's LM3S6965 Microcontroller Data Sheet (DS-LM3S6965): System Control (RCGC1,
 * RCGC2), GPIO (GPIODATA's address mask, GPIODIR, GPIODEN), UART (UARTDR, UARTFR, UARTIBRD/FBRD,
 * UARTLCRH, UARTCTL, UARTIM, UARTICR); interrupt 5 is UART0. */
#include "core.h"
#include "cortex_m.h"
#include "lm3s6965evb.h"

#define SYSCTL_RCGC1 JL_REG(0x400FE104u)
#define SYSCTL_RCGC2 JL_REG(0x400FE108u)
#define RCGC1_UART0 (1u << 0)
#define RCGC2_GPIOF (1u << 5)

#define GPIOF 0x40025000u
#define WAVE_MASK (1u << 0)                       /* PF0 */
#define GPIOF_DATA_WAVE JL_REG(GPIOF + (WAVE_MASK << 2)) /* address bits 9:2 mask the write */
#define GPIOF_DIR JL_REG(GPIOF + 0x400u)
#define GPIOF_DEN JL_REG(GPIOF + 0x51Cu)

#define UART0 0x4000C000u
#define UART_DR JL_REG(UART0 + 0x000u)
#define UART_FR JL_REG(UART0 + 0x018u)
#define UART_IBRD JL_REG(UART0 + 0x024u)
#define UART_FBRD JL_REG(UART0 + 0x028u)
#define UART_LCRH JL_REG(UART0 + 0x02Cu)
#define UART_CTL JL_REG(UART0 + 0x030u)
#define UART_IM JL_REG(UART0 + 0x038u)
#define UART_ICR JL_REG(UART0 + 0x044u)
#define FR_RXFE (1u << 4)
#define FR_TXFF (1u << 5)
#define LCRH_WLEN8 (3u << 5) /* 8 bits, no parity, one stop bit; FIFOs off: a byte per interrupt */
#define CTL_UARTEN (1u << 0)
#define CTL_TXE (1u << 8)
#define CTL_RXE (1u << 9)
#define IM_RXIM (1u << 4)
#define IM_RTIM (1u << 6)
#define UART0_IRQ 5u

const struct jl_unit jl_unit = {"lm3s6965evb", JL_TIMER_HZ, JL_MIN_RELOAD, JL_MAX_RELOAD};

void jl_unit_pin(int level) { GPIOF_DATA_WAVE = level ? WAVE_MASK : 0u; }

void jl_unit_send(const char *line, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++) {
        while (UART_FR & FR_TXFF)
            ;
        UART_DR = (uint8_t)line[i];
    }
}

static void uart0_isr(void)
{
    while (!(UART_FR & FR_RXFE))
        jl_core_rx((char)(UART_DR & 0xFFu));
    UART_ICR = IM_RXIM | IM_RTIM;
}

int main(void)
{
    SYSCTL_RCGC1 |= RCGC1_UART0;
    SYSCTL_RCGC2 |= RCGC2_GPIOF;
    GPIOF_DIR |= WAVE_MASK;
    GPIOF_DEN |= WAVE_MASK;
    jl_unit_pin(0);
    /* 115200 baud from the 12.5 MHz clock: 12.5e6 / (16 * 115200) = 6 + 50/64 */
    UART_CTL = 0;
    UART_IBRD = 6;
    UART_FBRD = 50;
    UART_LCRH = LCRH_WLEN8;
    UART_IM = IM_RXIM | IM_RTIM;
    UART_CTL = CTL_UARTEN | CTL_TXE | CTL_RXE;
    jl_nvic_enable(UART0_IRQ);
    for (;;) {
        if (jl_core_poll())
            continue;
        jl_irq_off();
        if (!jl_core_waiting())
            jl_wait_for_interrupt();
        jl_irq_on();
    }
}

JL_IRQ_VECTORS static const jl_vector irq_vectors[UART0_IRQ + 1] = {
    [UART0_IRQ] = uart0_isr,
};
