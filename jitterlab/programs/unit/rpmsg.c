/* See rpmsg.h. The rings' memory is Linux's (it allocates them and writes their addresses into the
 * resource table before it says DRIVER_OK); this side takes filled buffers from ring 1 and returns
 * them, and takes Linux's empty buffers from ring 0 to send in, as virtio's device side does. */
#include "rpmsg.h"

#include "core.h"

#define RSC_VDEV 3u
#define VIRTIO_ID_RPMSG 7u
#define VIRTIO_RPMSG_F_NS 0u
#define VIRTIO_CONFIG_S_DRIVER_OK 4u
#define FW_RSC_ADDR_ANY 0xFFFFFFFFu
#define RPMSG_NS_ADDR 53u
#define RPMSG_NS_CREATE 0u
#define RPMSG_BUF_SIZE 512u
#define RPMSG_NAME_SIZE 32u

struct fw_rsc_vdev_vring {
    uint32_t da, align, num, notifyid, pa;
} __attribute__((packed));

struct jl_resource_table {
    uint32_t ver, num, reserved[2];
    uint32_t offset[1];
    /* the one entry: a virtio device (struct fw_rsc_hdr + struct fw_rsc_vdev) */
    uint32_t type;
    uint32_t id, notifyid, dfeatures, gfeatures, config_len;
    uint8_t status, num_of_vrings, reserved2[2];
    struct fw_rsc_vdev_vring vring[2];
} __attribute__((packed));

/* Linux finds it by its section's name and writes into it: the rings' addresses, the status. */
__attribute__((section(".resource_table"), used)) volatile struct jl_resource_table jl_resource_table = {
    .ver = 1,
    .num = 1,
    .offset = {__builtin_offsetof(struct jl_resource_table, type)},
    .type = RSC_VDEV,
    .id = VIRTIO_ID_RPMSG,
    .notifyid = 2,
    .dfeatures = 1u << VIRTIO_RPMSG_F_NS,
    .num_of_vrings = 2,
    .vring = {{FW_RSC_ADDR_ANY, JL_RPMSG_ALIGN, JL_RPMSG_NUM, 0, 0},
              {FW_RSC_ADDR_ANY, JL_RPMSG_ALIGN, JL_RPMSG_NUM, 1, 0}},
};

struct vring_desc {
    uint64_t addr;
    uint32_t len;
    uint16_t flags, next;
};
struct vring_avail {
    uint16_t flags, idx, ring[JL_RPMSG_NUM];
};
struct vring_used_elem {
    uint32_t id, len;
};
struct vring_used {
    uint16_t flags, idx;
    struct vring_used_elem ring[JL_RPMSG_NUM];
};
struct ring {
    volatile struct vring_desc *desc;
    volatile struct vring_avail *avail;
    volatile struct vring_used *used;
    uint16_t next_avail; /* the next entry of avail->ring this side takes */
};
struct rpmsg_hdr {
    uint32_t src, dst, reserved;
    uint16_t len, flags;
    uint8_t data[];
} __attribute__((packed));
struct rpmsg_ns_msg {
    char name[RPMSG_NAME_SIZE];
    uint32_t addr, flags;
} __attribute__((packed));

static struct ring rings[2]; /* 0: Linux receives (we send), 1: Linux sends (we receive) */
static int ready;
static uint32_t remote = RPMSG_NS_ADDR;
static uint32_t dropped;

static void barrier(void) { __sync_synchronize(); }

/* The split ring's layout in Linux's memory at `da` (vring_init with JL_RPMSG_ALIGN). */
static void attach(struct ring *r, uint32_t da)
{
    uintptr_t base = (uintptr_t)jl_rpmsg_local(da);
    uintptr_t avail = base + JL_RPMSG_NUM * sizeof(struct vring_desc);
    uintptr_t used = avail + sizeof(uint16_t) * (3u + JL_RPMSG_NUM);
    used = (used + JL_RPMSG_ALIGN - 1u) & ~(uintptr_t)(JL_RPMSG_ALIGN - 1u);
    r->desc = (volatile struct vring_desc *)base;
    r->avail = (volatile struct vring_avail *)avail;
    r->used = (volatile struct vring_used *)used;
    r->next_avail = 0;
}

static void give_back(struct ring *r, uint16_t head, uint32_t len)
{
    uint16_t at = r->used->idx;
    r->used->ring[at % JL_RPMSG_NUM].id = head;
    r->used->ring[at % JL_RPMSG_NUM].len = len;
    barrier();
    r->used->idx = (uint16_t)(at + 1u);
}

static void send_from(uint32_t dst, const void *bytes, uint32_t len)
{
    struct ring *r = &rings[0];
    if (!ready || r->avail->idx == r->next_avail || len > RPMSG_BUF_SIZE - sizeof(struct rpmsg_hdr)) {
        dropped++;
        return;
    }
    barrier();
    uint16_t head = r->avail->ring[r->next_avail % JL_RPMSG_NUM];
    r->next_avail++;
    volatile struct rpmsg_hdr *h = jl_rpmsg_local(r->desc[head].addr);
    h->src = JL_RPMSG_ADDR;
    h->dst = dst;
    h->reserved = 0;
    h->len = (uint16_t)len;
    h->flags = 0;
    for (uint32_t i = 0; i < len; i++)
        h->data[i] = ((const uint8_t *)bytes)[i];
    give_back(r, head, (uint32_t)sizeof(struct rpmsg_hdr) + len);
    jl_rpmsg_kick(0);
}

void jl_rpmsg_send(const char *bytes, uint32_t len) { send_from(remote, bytes, len); }

uint32_t jl_rpmsg_dropped(void) { return dropped; }

int jl_rpmsg_waiting(void) { return ready && rings[1].avail->idx != rings[1].next_avail; }

void jl_rpmsg_poll(void)
{
    if (!ready) {
        if (!(jl_resource_table.status & VIRTIO_CONFIG_S_DRIVER_OK))
            return;
        barrier();
        attach(&rings[0], jl_resource_table.vring[0].da);
        attach(&rings[1], jl_resource_table.vring[1].da);
        ready = 1;
        struct rpmsg_ns_msg ns = {.name = JL_RPMSG_CHANNEL, .addr = JL_RPMSG_ADDR, .flags = RPMSG_NS_CREATE};
        send_from(RPMSG_NS_ADDR, &ns, sizeof ns);
    }
    struct ring *r = &rings[1];
    int took = 0;
    while (r->avail->idx != r->next_avail) {
        barrier();
        uint16_t head = r->avail->ring[r->next_avail % JL_RPMSG_NUM];
        r->next_avail++;
        volatile struct rpmsg_hdr *h = jl_rpmsg_local(r->desc[head].addr);
        if (h->dst == JL_RPMSG_ADDR) {
            remote = h->src;
            for (uint32_t i = 0; i < h->len && i < RPMSG_BUF_SIZE - sizeof *h; i++)
                jl_core_rx((char)h->data[i]);
        }
        give_back(r, head, r->desc[head].len);
        took = 1;
    }
    if (took)
        jl_rpmsg_kick(1);
}
