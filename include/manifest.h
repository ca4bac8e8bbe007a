/* manifest: YAML (libyaml) to cJSON, several documents per file, several files. */
#ifndef SPOTPOOL_MANIFEST_H
#define SPOTPOOL_MANIFEST_H

#include "pool.h"
#include "spotpool.h"

#include <cjson/cJSON.h>

#define MANIFEST_FILE_MAX (4 * 1024 * 1024)
#define MANIFEST_DEPTH_MAX 64

/* Where a mapping key was written: "a.b" for key b inside a; list items as "a[0]". */
struct manifest_line {
	char *path;
	int line;
};

struct manifest_doc {
	char *source;     /* file name */
	int index;        /* 1-based document number within the file */
	cJSON *object;
	struct manifest_line *lines;
	size_t n_lines;
};

struct manifest_set {
	struct manifest_doc *docs;
	size_t n;
};

/* Parses YAML text (JSON is YAML too) and appends its non-empty documents to set;
 * `kind: List` documents are expanded into their items. */
int manifest_parse(const char *text, size_t len, const char *source, struct manifest_set *set,
		   struct sp_error *err);
int manifest_load_file(const char *path, struct manifest_set *set, struct sp_error *err);
void manifest_set_free(struct manifest_set *set);
/* 1-based line of the key at path in doc, or 0 when unknown. */
int manifest_line_of(const struct manifest_doc *doc, const char *path);

/* Validates every Spotpool document of the set into specs (owned array of owned specs).
 * Documents of other kinds are skipped. Errors name the file, document and field. */
int manifest_pools(const struct manifest_set *set, struct pool_spec ***ret_pools, size_t *ret_n,
		   struct sp_error *err);
/* Looks up a Secret document by namespace and name; returns its decoded value for key
 * (caller frees with sp_secure_free), or NULL. */
char *manifest_secret_value(const struct manifest_set *set, const char *ns, const char *name,
			    const char *key);

#endif
