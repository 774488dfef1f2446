/* RPMsg over virtio, the remote side, for a unit that Linux starts with remoteproc: the resource
 * table Linux reads from the firmware, the two split rings it sets up in shared memory, and one
 * endpoint that announces itself as an rpmsg-tty channel, so that Linux gives it a /dev/ttyRPMSG<N>.
 * Layouts from Linux: include/linux/remoteproc.h (resource table, RSC_VDEV),
 * include/uapi/linux/virtio_ring.h (split ring), drivers/rpmsg/virtio_rpmsg_bus.c (message header,
 * name service at address 53, 512-byte buffers), drivers/tty/rpmsg_tty.c (channel "rpmsg-tty").
 * The unit's layer kicks Linux through its mailbox and maps Linux's addresses to its own. */
#ifndef JL_RPMSG_H
#define JL_RPMSG_H

#include <stdint.h>

#ifndef JL_RPMSG_CHANNEL
#define JL_RPMSG_CHANNEL "rpmsg-tty" /* mainline's rpmsg_tty; vendor kernels may name theirs otherwise */
#endif
#define JL_RPMSG_NUM 8u   /* buffers per ring (a power of two) */
#define JL_RPMSG_ALIGN 16u
#define JL_RPMSG_ADDR 0x400u /* this endpoint's address */

/* What the unit's layer provides. */
void jl_rpmsg_kick(unsigned vring);     /* tell Linux that ring `vring` (0: its receive ring) moved */
void *jl_rpmsg_local(uint64_t address); /* a buffer address Linux wrote, as this core sees it */

/* What the transport provides. */
void jl_rpmsg_poll(void);    /* main loop: set up once Linux is ready, feed received bytes to the core */
int jl_rpmsg_waiting(void);  /* a message Linux sent is not yet read (look with interrupts off) */
void jl_rpmsg_send(const char *bytes, uint32_t len); /* to the endpoint that last wrote to us */
uint32_t jl_rpmsg_dropped(void); /* replies lost for want of a buffer Linux gave */

#endif
