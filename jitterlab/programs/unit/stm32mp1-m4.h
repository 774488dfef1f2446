/* The stm32mp1-m4 unit's timer, as jitterlab's profile of it states too (programs/unit/__init__.py:
 * it checks a campaign's periods before anything is built; a test keeps the two equal). */
#define JL_TIMER_HZ 209000000u /* mcu_ck of ST's STM32MP157 boards' device trees (the SysTick counts it) */
#define JL_MIN_RELOAD 418u     /* 2 us: the interrupt and the toggle take well under a tenth of it */
#define JL_MAX_RELOAD 0x00FFFFFFu
