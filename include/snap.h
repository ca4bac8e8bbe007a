/* snap: a compact snapshot of the instances one account listing found, sorted by
 * (pool tag, id). The inventory keeps one per account for as long as the process runs,
 * so its size is the controller's memory at scale: a full struct pool_instance is
 * about 600 bytes of mostly empty fixed fields; a record here is ten string offsets
 * and a time (48 bytes), and each distinct string (zone, type, owner, cluster, launch
 * token, state) is stored once, so 10,000 instances take about 1 MB, not 6. Pure. */
#ifndef SPOTPOOL_SNAP_H
#define SPOTPOOL_SNAP_H

#include "pool.h"
#include "spotpool.h"

struct snap;

struct snap *snap_new(void);
void snap_free(struct snap *s);
/* Appends a copy of inst (its strings interned). */
void snap_add(struct snap *s, const struct pool_instance *inst);
/* Sorts by (pool tag, id) and drops what only adding needs. Call once, after the last
 * snap_add; the lookups below need it. */
void snap_seal(struct snap *s);
size_t snap_count(const struct snap *s);
/* The heap bytes the snapshot holds (records and strings). */
size_t snap_bytes(const struct snap *s);
/* The ID of the i-th record (i < snap_count) of a sealed snapshot, in its order. */
const char *snap_id_at(const struct snap *s, size_t i);
/* What a lookup by ID of the records [from, to) of a sealed snapshot changes in it: found
 * is what DescribeInstancesStatus answered for their IDs. A record absent from found is
 * gone (dropped), one found in another state takes that state; records outside
 * [from, to) stay as they are. Returns a new sealed snapshot, or NULL when nothing
 * differs. */
struct snap *snap_follow(const struct snap *s, size_t from, size_t to, const struct pool_instance_status *found,
			 size_t n_found);
/* The instances tagged owner, as full records (the caller frees *ret_instances). */
void snap_owner(const struct snap *s, const char *owner, struct pool_instance **ret_instances, size_t *ret_n);
/* Calls changed(userdata, owner) once for every owner whose instances differ between
 * two sealed snapshots (old may be NULL: everything in cur is new): an instance that
 * appeared or went, or a new state or IP. Untagged instances are never reported. */
void snap_diff(const struct snap *old, const struct snap *cur, void (*changed)(void *userdata, const char *owner),
	       void *userdata);

#endif
