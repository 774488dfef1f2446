/* The lm3s6965evb unit's timer, as jitterlab's profile of it states too (programs/unit/__init__.py:
 * it checks a campaign's periods before anything is built; a test keeps the two equal). */
#define JL_TIMER_HZ 12500000u /* qemu's default LM3S6965 system clock: 200 MHz / (SYSDIV 15 + 1) */
#define JL_MIN_RELOAD 625u    /* 50 us: an emulated CPU keeps up with no shorter half period */
#define JL_MAX_RELOAD 0x00FFFFFFu
