/* tmpl: a pool's node template (spec.nodeTemplate): the labels and taints its Nodes carry
 * (the bootstrap applies them at registration), Kubernetes' syntax for both, and their
 * validation, as strict as the apiserver's for Nodes. Pure: no I/O. */
#ifndef SPOTPOOL_TMPL_H
#define SPOTPOOL_TMPL_H

#include "spotpool.h"

#include <cjson/cJSON.h>

#define TMPL_LABELS_MAX 64
#define TMPL_TAINTS_MAX 32
/* A qualified name (label or taint key): an optional DNS subdomain prefix of at most 253
 * characters and '/', then a name of at most 63. A label value is at most 63. */
#define TMPL_PREFIX_MAX 253
#define TMPL_NAME_MAX 63
#define TMPL_KEY_MAX (TMPL_PREFIX_MAX + 1 + TMPL_NAME_MAX)

/* core/v1 TaintEffect. */
enum tmpl_effect { TMPL_NO_SCHEDULE, TMPL_PREFER_NO_SCHEDULE, TMPL_NO_EXECUTE };

struct tmpl_label {
	char *key;
	char *value;  /* "" for an empty value */
};

struct tmpl_taint {
	char *key;
	char *value;  /* "" when none */
	enum tmpl_effect effect;
};

struct tmpl_node {
	struct tmpl_label *labels;  /* in the order written */
	size_t n_labels;
	struct tmpl_taint *taints;
	size_t n_taints;
};

/* Reads spec.nodeTemplate (v; absent or null: an empty template) into ret, which must be
 * empty. Errors name the field ("spec.nodeTemplate.taints[2].effect: ..."); on failure
 * ret is left empty. */
int tmpl_parse(const cJSON *v, struct tmpl_node *ret, struct sp_error *err);
void tmpl_clear(struct tmpl_node *t);

/* Kubernetes' qualified name (IsQualifiedName): label and taint keys. */
bool tmpl_key_valid(const char *s);
/* A label value (IsValidLabelValue): empty, or 1-63 of [A-Za-z0-9-_.] beginning and
 * ending with a letter or digit. Taint values follow the same rule. */
bool tmpl_label_value_valid(const char *s);
const char *tmpl_effect_name(enum tmpl_effect e);
/* An effect by its name (exact, as the apiserver has it): 0, or SP_EINVAL for another. */
int tmpl_effect_parse(const char *s, enum tmpl_effect *ret);

/* The template as the kubelet's flags take it: --node-labels "k=v,k2=v2" and
 * --register-with-taints "k=v:NoSchedule,k2:NoExecute" (empty strings for none). Caller
 * frees. */
char *tmpl_kubelet_labels(const struct tmpl_node *t);
char *tmpl_kubelet_taints(const struct tmpl_node *t);

#endif
