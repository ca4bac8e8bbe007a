/* manifest: YAML (libyaml) to cJSON, several documents per file, several files. */
#ifndef SPOTPOOL_MANIFEST_H
#define SPOTPOOL_MANIFEST_H

#include "pool.h"
#include "spotpool.h"

#include <cjson/cJSON.h>

/* Input caps, so that no file can make reading slow or large (reading is linear in the
 * input; these bound it). Each is an error naming the file (and line):
 *   MANIFEST_FILE_MAX  bytes per file, standard input included;
 *   MANIFEST_DEPTH_MAX levels of nested mappings and lists (the document is level 1);
 *   MANIFEST_KEYS_MAX  mapping keys plus list items per file (a Spotpool has about 30). */
#define MANIFEST_FILE_MAX (4 * 1024 * 1024)
#define MANIFEST_DEPTH_MAX 64
#define MANIFEST_KEYS_MAX 100000
/* Lines are recorded for keys whose path ("spec.systemDisk.diskSize") is at most this long. */
#define MANIFEST_PATH_MAX 512
/* Problems kept by manifest_errors; further ones are only counted. */
#define MANIFEST_ERRORS_MAX 1000

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
	size_t cap;
};

/* Every problem found in a set of files, one message each, e.g.
 * "pool.yaml: document 2 (spotpool-b): spec.minimum: must be between 0 and 1000, got -1 (line 9)". */
struct manifest_errors {
	struct strv list;  /* at most MANIFEST_ERRORS_MAX */
	size_t n;          /* == list.n */
	size_t more;       /* problems found past MANIFEST_ERRORS_MAX */
};
void manifest_error(struct manifest_errors *errs, const char *msg);
/* msg is about a field of d ("spec.minimum: ..."): adds file, document, name and line. */
void manifest_doc_error(struct manifest_errors *errs, const struct manifest_doc *d, const char *msg);
void manifest_errors_clear(struct manifest_errors *errs);

/* Parses YAML text (JSON is YAML too) and appends its non-empty documents to set;
 * `kind: List` documents are expanded into their items. */
int manifest_parse(const char *text, size_t len, const char *source, struct manifest_set *set,
		   struct sp_error *err);
int manifest_load_file(const char *path, struct manifest_set *set, struct sp_error *err);
void manifest_set_free(struct manifest_set *set);
/* 1-based line of the key at path in doc, or 0 when unknown. */
int manifest_line_of(const struct manifest_doc *doc, const char *path);

/* Validates every Spotpool document of the set into specs (owned array of owned specs).
 * Documents of other kinds are skipped. Every problem of every document is appended to
 * errs (file, document, name, field and line); SP_EINVAL when there was any. */
int manifest_pools_all(const struct manifest_set *set, struct pool_spec ***ret_pools, size_t *ret_n,
		       struct manifest_errors *errs);
/* The same, reporting only the first problem. */
int manifest_pools(const struct manifest_set *set, struct pool_spec ***ret_pools, size_t *ret_n,
		   struct sp_error *err);
/* Reads key of the Secret document ns/name among the set ("stringData" over "data",
 * base64-decoded). *ret_value is the value (caller frees with sp_secure_free), or NULL when
 * optional and absent or empty. Errors (never with values): SP_ENOTFOUND "Secret ns/name:
 * not found"; SP_EINVAL key absent (names the keys present), empty, not a string or not
 * base64, naming the file and line. */
int manifest_secret_lookup(const struct manifest_set *set, const char *ns, const char *name,
			   const char *key, bool optional, char **ret_value, struct sp_error *err);
/* Looks up a Secret document by namespace and name; returns its decoded value for key
 * (caller frees with sp_secure_free), or NULL. */
char *manifest_secret_value(const struct manifest_set *set, const char *ns, const char *name,
			    const char *key);

#endif
