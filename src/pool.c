/* pool: Spotpool spec validation, as strict as the CRD schema. */
#include "pool.h"

#include <ctype.h>
#include <math.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

static const char *const known_spec_fields[] = {
	"secretId", "secretKey", "credentialsSecretRef", "region", "availabilityZone",
	"instanceType", "minimum", "maximum", "replicas", "subnetId", "vpcId",
	"securityGroupIds", "imageId", "instanceChargeType", "maxPrice",
	"internetMaxBandwidthOut", "systemDisk", "keyIds", "userData", "tags",
	"deletionPolicy", "instanceTypes", "availabilityZones", "allocationStrategy", "drainTimeout",
	"maximumIncludesDoomed", "autoscaling", "nodeTemplate", NULL,
};

const char *pool_json_type(const cJSON *v)
{
	if (cJSON_IsString(v)) return "string";
	if (cJSON_IsNumber(v)) return "number";
	if (cJSON_IsBool(v)) return "boolean";
	if (cJSON_IsNull(v)) return "null";
	if (cJSON_IsArray(v)) return "list";
	if (cJSON_IsObject(v)) return "object";
	return "unknown";
}

static bool matches_charset(const char *s, const char *extra)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
			return false;
	return true;
}

/* Reads an optional (or required) string field; ret stays NULL when absent. */
static int get_string(const cJSON *obj, const char *path, const char *field, bool required,
		      size_t max_len, char **ret, struct sp_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return sp_fail(err, SP_EINVAL, "%s.%s: required field is missing", path, field);
		return 0;
	}
	if (!cJSON_IsString(v))
		return sp_fail(err, SP_EINVAL, "%s.%s: must be a string, got %s", path, field,
			       pool_json_type(v));
	if (required && !*v->valuestring)
		return sp_fail(err, SP_EINVAL, "%s.%s: must not be empty", path, field);
	if (strlen(v->valuestring) > max_len)
		return sp_fail(err, SP_EINVAL, "%s.%s: %zu characters, longer than the maximum %zu", path,
			       field, strlen(v->valuestring), max_len);
	*ret = xstrdup(v->valuestring);
	return 0;
}

static int get_int(const cJSON *obj, const char *path, const char *field, bool required, int lo,
		   int hi, int *ret, bool *ret_present, struct sp_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (ret_present)
		*ret_present = false;
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return sp_fail(err, SP_EINVAL, "%s.%s: required field is missing", path, field);
		return 0;
	}
	if (!cJSON_IsNumber(v)) {
		if (cJSON_IsString(v))
			return sp_fail(err, SP_EINVAL, "%s.%s: must be an integer, got string \"%.40s\"",
				       path, field, v->valuestring);
		return sp_fail(err, SP_EINVAL, "%s.%s: must be an integer, got %s", path, field,
			       pool_json_type(v));
	}
	double d = v->valuedouble;
	/* Echoed as written in the file (manifest.c keeps a number's text), else as JSON. */
	char text[48];
	snprintf(text, sizeof(text), "%.40s", v->valuestring ? v->valuestring : "");
	if (!v->valuestring)
		snprintf(text, sizeof(text), "%.17g", d);
	if (!isfinite(d) || d != floor(d))
		return sp_fail(err, SP_EINVAL, "%s.%s: must be an integer, got %s", path, field, text);
	if (d < lo || d > hi)
		return sp_fail(err, SP_EINVAL, "%s.%s: must be between %d and %d, got %s", path,
			       field, lo, hi, text);
	*ret = (int)d;
	if (ret_present)
		*ret_present = true;
	return 0;
}

static int get_string_list(const cJSON *obj, const char *path, const char *field,
			   const char *prefix, size_t max_items, struct strv *ret, struct sp_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return sp_fail(err, SP_EINVAL, "%s.%s: must be a list of strings, got %s", path, field,
			       pool_json_type(v));
	size_t i = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, v) {
		if (!cJSON_IsString(item))
			return sp_fail(err, SP_EINVAL, "%s.%s[%zu]: must be a string, got %s", path, field,
				       i, pool_json_type(item));
		if (prefix && strncmp(item->valuestring, prefix, strlen(prefix)) != 0)
			return sp_fail(err, SP_EINVAL, "%s.%s[%zu]: must start with \"%s\", got \"%.64s\"",
				       path, field, i, prefix, item->valuestring);
		if (strlen(item->valuestring) > 64 || !matches_charset(item->valuestring, "-_"))
			return sp_fail(err, SP_EINVAL, "%s.%s[%zu]: not a valid ID", path, field, i);
		if (++i > max_items)
			return sp_fail(err, SP_EINVAL, "%s.%s: %d items, more than the maximum %zu", path,
				       field, cJSON_GetArraySize(v), max_items);
		strv_push(ret, item->valuestring);
	}
	return 0;
}

static bool dns_name_valid(const char *s, size_t max, bool dots)
{
	size_t n = strlen(s);
	bool ok = n > 0 && n <= max && isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
	for (size_t i = 0; ok && i < n; i++)
		ok = islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' ||
		     (dots && s[i] == '.');
	return ok;
}

bool pool_dns_label_valid(const char *s)
{
	return dns_name_valid(s, 63, false);
}

int pool_unknown_field(struct sp_error *err, const char *path, const char *field, const char *const *known)
{
	size_t n = 0;
	while (known[n])
		n++;
	const char *near = sp_nearest(field, known, n);
	return sp_fail(err, SP_EINVAL, "%s%s%.64s: unknown field%s%s%s", path, *path ? "." : "", field,
		       near ? " (did you mean \"" : "", near ? near : "", near ? "\"?)" : "");
}

static int check_dns_name(const char *what, const char *s, size_t max, bool dots,
			  struct sp_error *err)
{
	if (!dns_name_valid(s, max, dots))
		return sp_fail(err, SP_EINVAL,
			       "%s: \"%.64s\" is not a valid name (lower-case letters, digits and '-'%s, "
			       "at most %zu characters)", what, s, dots ? " or '.'" : "", max);
	return 0;
}

static int parse_metadata(const cJSON *obj, const char *default_namespace, struct pool_spec *p,
			  struct sp_error *err)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	if (!cJSON_IsObject(md))
		return sp_fail(err, SP_EINVAL, "metadata: required object is missing");
	int r = get_string(md, "metadata", "name", true, 253, &p->name, err);
	if (r < 0 || (r = check_dns_name("metadata.name", p->name, 253, true, err)) < 0)
		return r;
	if ((r = get_string(md, "metadata", "namespace", false, 63, &p->namespace, err)) < 0)
		return r;
	if (!p->namespace)
		p->namespace = xstrdup(default_namespace ? default_namespace : "default");
	if ((r = check_dns_name("metadata.namespace", p->namespace, 63, false, err)) < 0)
		return r;
	if ((r = get_string(md, "metadata", "uid", false, 64, &p->uid, err)) < 0)
		return r;
	const cJSON *gen = cJSON_GetObjectItemCaseSensitive(md, "generation");
	if (cJSON_IsNumber(gen))
		p->generation = pool_json_int64(gen);
	return 0;
}

static bool is_region(const char *region)
{
	return matches_charset(region, "-") && strchr(region, '-') && !isupper((unsigned char)region[0]);
}

/* region followed by "-" and more letters or digits, e.g. ap-singapore-2. */
static bool is_zone_of(const char *zone, const char *region)
{
	size_t rl = strlen(region);
	return strncmp(zone, region, rl) == 0 && zone[rl] == '-' && zone[rl + 1] && matches_charset(zone, "-");
}

bool pool_zone_region(const char *zone, char *out, size_t size)
{
	const char *dash = zone ? strrchr(zone, '-') : NULL;
	if (!dash || !dash[1] || (size_t)(dash - zone) >= size)
		return false;
	char region[POOL_ZONE_MAX + 1];
	if ((size_t)(dash - zone) >= sizeof(region))
		return false;
	memcpy(region, zone, (size_t)(dash - zone));
	region[dash - zone] = '\0';
	if (!is_region(region) || !is_zone_of(zone, region))
		return false;
	snprintf(out, size, "%s", region);
	return true;
}

static int parse_region(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	int r;
	if ((r = get_string(spec, "spec", "region", true, 32, &p->region, err)) < 0)
		return r;
	if (!is_region(p->region))
		return sp_fail(err, SP_EINVAL, "spec.region: \"%s\" is not a region such as ap-singapore",
			       p->region);
	return 0;
}

/* Region and zone together: the zone must belong to the region. */
static int parse_zone(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	int r;
	if ((r = parse_region(spec, p, err)) < 0)
		return r;
	if ((r = get_string(spec, "spec", "availabilityZone", true, POOL_ZONE_MAX, &p->zone, err)) < 0)
		return r;
	if (!is_zone_of(p->zone, p->region))
		return sp_fail(err, SP_EINVAL,
			       "spec.availabilityZone: \"%s\" is not a zone of region %s (expected %s-N)",
			       p->zone, p->region, p->region);
	return 0;
}

static int parse_instance_type(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	int r;
	if ((r = get_string(spec, "spec", "instanceType", true, POOL_INSTANCE_TYPE_MAX, &p->instance_type, err)) < 0)
		return r;
	if (!matches_charset(p->instance_type, "."))
		return sp_fail(err, SP_EINVAL, "spec.instanceType: \"%.64s\" is not an instance type such "
			       "as GN7.2XLARGE32", p->instance_type);
	return 0;
}

/* spec.<field>: the further choices after the seed field (seed may be NULL when that field is
 * invalid): a list of at most POOL_OFFERING_LIST_MAX names of 1..max_len characters, each
 * accepted by check (which writes the error for item i), none twice, none repeating the seed. */
static int get_choices(const cJSON *spec, const char *field, const char *seed_field, const char *seed,
		       size_t max_len, int (*check)(const struct pool_spec *p, const char *item, size_t i,
						    struct sp_error *err),
		       const struct pool_spec *p, struct strv *ret, struct sp_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, field);
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return sp_fail(err, SP_EINVAL, "spec.%s: must be a list of strings, got %s", field,
			       pool_json_type(v));
	int n = cJSON_GetArraySize(v);
	if (n > POOL_OFFERING_LIST_MAX)
		return sp_fail(err, SP_EINVAL, "spec.%s: %d items, more than the maximum %d", field, n,
			       POOL_OFFERING_LIST_MAX);
	size_t i = 0;
	const cJSON *item;
	struct strv got = {0};
	int r = 0;
	cJSON_ArrayForEach(item, v) {
		if (!cJSON_IsString(item)) {
			r = sp_fail(err, SP_EINVAL, "spec.%s[%zu]: must be a string, got %s", field, i,
				    pool_json_type(item));
			break;
		}
		const char *s = item->valuestring;
		if (!*s || strlen(s) > max_len) {
			r = sp_fail(err, SP_EINVAL, "spec.%s[%zu]: %zu characters, must be 1 to %zu", field, i,
				    strlen(s), max_len);
			break;
		}
		if ((r = check(p, s, i, err)) < 0)
			break;
		if (seed && strcmp(s, seed) == 0) {
			r = sp_fail(err, SP_EINVAL, "spec.%s[%zu]: \"%s\" repeats spec.%s (list only the further "
				    "choices)", field, i, s, seed_field);
			break;
		}
		for (size_t j = 0; j < got.n; j++)
			if (strcmp(got.v[j], s) == 0) {
				r = sp_fail(err, SP_EINVAL, "spec.%s[%zu]: \"%s\" is listed twice (also at [%zu])",
					    field, i, s, j);
				break;
			}
		if (r < 0)
			break;
		strv_push(&got, s);
		i++;
	}
	if (r < 0) {
		strv_clear(&got);
		return r;
	}
	*ret = got;
	return 0;
}

static int check_zone_item(const struct pool_spec *p, const char *zone, size_t i, struct sp_error *err)
{
	/* Without a valid region (reported on its own) only the form can be checked. */
	if (p->region && is_region(p->region) && !is_zone_of(zone, p->region))
		return sp_fail(err, SP_EINVAL, "spec.availabilityZones[%zu]: \"%s\" is not a zone of region %s "
			       "(expected %s-N)", i, zone, p->region, p->region);
	if (!matches_charset(zone, "-"))
		return sp_fail(err, SP_EINVAL, "spec.availabilityZones[%zu]: \"%s\" is not a zone such as "
			       "ap-singapore-2", i, zone);
	return 0;
}

static int check_type_item(const struct pool_spec *p, const char *type, size_t i, struct sp_error *err)
{
	(void)p;
	if (!matches_charset(type, "."))
		return sp_fail(err, SP_EINVAL, "spec.instanceTypes[%zu]: \"%s\" is not an instance type such "
			       "as GN7.2XLARGE32", i, type);
	return 0;
}

static int parse_zones(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	return get_choices(spec, "availabilityZones", "availabilityZone", p->zone, POOL_ZONE_MAX,
			   check_zone_item, p, &p->zones, err);
}

static int parse_instance_types(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	return get_choices(spec, "instanceTypes", "instanceType", p->instance_type, POOL_INSTANCE_TYPE_MAX,
			   check_type_item, p, &p->instance_types, err);
}

/* An optional spec.<field> that is either first (the default) or second; *ret_second
 * is set only when it is second. */
static int get_either(const cJSON *spec, const char *field, const char *first, const char *second,
		      bool *ret_second, struct sp_error *err)
{
	char *v = NULL;
	int r = get_string(spec, "spec", field, false, 16, &v, err);
	if (r < 0)
		return r;
	if (v && strcmp(v, second) == 0)
		*ret_second = true;
	else if (v && strcmp(v, first) != 0)
		r = sp_fail(err, SP_EINVAL, "spec.%s: must be %s or %s, got \"%s\"", field, first, second, v);
	free(v);
	return r;
}

static int parse_allocation(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	bool spread = false;
	int r = get_either(spec, "allocationStrategy", "prioritized", "spread", &spread, err);
	if (r == 0 && spread)
		p->allocation = POOL_SPREAD;
	return r;
}

static int parse_image(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	int r;
	if ((r = get_string(spec, "spec", "imageId", true, 64, &p->image_id, err)) < 0)
		return r;
	if (strncmp(p->image_id, "img-", 4) != 0 || !matches_charset(p->image_id, "-"))
		return sp_fail(err, SP_EINVAL, "spec.imageId: \"%.64s\" is not an image ID (img-...)",
			       p->image_id);
	return 0;
}

static int parse_network(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	int r;
	if ((r = get_string(spec, "spec", "vpcId", false, 64, &p->vpc_id, err)) < 0 ||
	    (r = get_string(spec, "spec", "subnetId", false, 64, &p->subnet_id, err)) < 0)
		return r;
	if (!p->vpc_id != !p->subnet_id)
		return sp_fail(err, SP_EINVAL, "spec.%s: required together with spec.%s",
			       p->vpc_id ? "subnetId" : "vpcId", p->vpc_id ? "vpcId" : "subnetId");
	return 0;
}

static int parse_security_groups(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	return get_string_list(spec, "spec", "securityGroupIds", "sg-", 5, &p->security_group_ids, err);
}

/* Records a failed check's error in errs; true when the check passed. */
static bool noted(struct pool_errors *errs, int r, const struct sp_error *e)
{
	if (r >= 0)
		return true;
	if (errs->n < POOL_ERRORS_MAX)
		errs->v[errs->n++] = *e;
	else
		errs->more++;
	return false;
}

/* minimum, maximum and replicas, each checked on its own, then against each other. */
static void check_size(const cJSON *spec, struct pool_spec *p, struct pool_errors *errs)
{
	struct sp_error e = {0};
	bool ok = noted(errs, get_int(spec, "spec", "minimum", true, 0, POOL_MAX_INSTANCES, &p->minimum,
				      NULL, &e), &e);
	ok &= noted(errs, get_int(spec, "spec", "maximum", true, 0, POOL_MAX_INSTANCES, &p->maximum,
				  NULL, &e), &e);
	if (ok && p->minimum > p->maximum)
		ok = noted(errs, sp_fail(&e, SP_EINVAL, "spec.minimum: %d is greater than spec.maximum %d",
					 p->minimum, p->maximum), &e);
	ok &= noted(errs, get_int(spec, "spec", "replicas", false, 0, POOL_MAX_INSTANCES, &p->replicas,
				  &p->has_replicas, &e), &e);
	if (ok && p->has_replicas && (p->replicas < p->minimum || p->replicas > p->maximum))
		noted(errs, sp_fail(&e, SP_EINVAL, "spec.replicas: %d is outside [minimum %d, maximum %d]",
				    p->replicas, p->minimum, p->maximum), &e);
}

static int parse_credentials(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	int r;
	if ((r = get_string(spec, "spec", "secretId", false, 128, &p->secret_id, err)) < 0 ||
	    (r = get_string(spec, "spec", "secretKey", false, 128, &p->secret_key, err)) < 0)
		return r;
	if (!p->secret_id != !p->secret_key)
		return sp_fail(err, SP_EINVAL, "spec.%s: required together with spec.%s",
			       p->secret_id ? "secretKey" : "secretId", p->secret_id ? "secretId" : "secretKey");
	const cJSON *ref = cJSON_GetObjectItemCaseSensitive(spec, "credentialsSecretRef");
	if (!ref || cJSON_IsNull(ref))
		return 0;
	if (!cJSON_IsObject(ref))
		return sp_fail(err, SP_EINVAL, "spec.credentialsSecretRef: must be an object with a name");
	const cJSON *f;
	cJSON_ArrayForEach(f, ref)
		if (strcmp(f->string, "name") != 0)
			return pool_unknown_field(err, "spec.credentialsSecretRef", f->string, (const char *const[]){"name", NULL});
	if ((r = get_string(ref, "spec.credentialsSecretRef", "name", true, 253, &p->credentials_secret, err)) < 0 ||
	    (r = check_dns_name("spec.credentialsSecretRef.name", p->credentials_secret, 253, true, err)) < 0)
		return r;
	if (p->secret_id)
		return sp_fail(err, SP_EINVAL, "spec.credentialsSecretRef: cannot be combined with inline "
			       "spec.secretId/spec.secretKey; remove the inline keys");
	return 0;
}

static bool is_decimal(const char *s)
{
	size_t digits = strspn(s, "0123456789");
	if (digits == 0)
		return false;
	if (s[digits] == '\0')
		return true;
	return s[digits] == '.' && s[digits + 1] && strspn(s + digits + 1, "0123456789") == strlen(s + digits + 1);
}

static bool is_base64(const char *s)
{
	size_t n = strlen(s), pad = 0;
	if (n % 4)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '=') {
			if (++pad > 2 || i < n - 2)
				return false;
		} else if (pad || !(isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '/')) {
			return false;
		}
	}
	return true;
}

static int parse_tags(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	const cJSON *tags = cJSON_GetObjectItemCaseSensitive(spec, "tags");
	if (!tags || cJSON_IsNull(tags))
		return 0;
	if (!cJSON_IsObject(tags))
		return sp_fail(err, SP_EINVAL, "spec.tags: must be a map of tag key to value, got %s",
			       pool_json_type(tags));
	int n = cJSON_GetArraySize(tags);
	if (n > 20)
		return sp_fail(err, SP_EINVAL, "spec.tags: %d tags, more than the maximum 20", n);
	p->tags = xcalloc((size_t)n, sizeof(*p->tags));
	const cJSON *t;
	cJSON_ArrayForEach(t, tags) {
		if (!cJSON_IsString(t))
			return sp_fail(err, SP_EINVAL, "spec.tags.%.127s: must be a string, got %s", t->string,
				       pool_json_type(t));
		if (strncmp(t->string, "spotpool.jokerbai.com/", 22) == 0)
			return sp_fail(err, SP_EINVAL, "spec.tags.%s: keys under spotpool.jokerbai.com/ are "
				       "reserved for pool ownership", t->string);
		if (!*t->string || strlen(t->string) > 127 || strlen(t->valuestring) > 255)
			return sp_fail(err, SP_EINVAL, "spec.tags.%.127s: key of %zu characters (must be "
				       "1-127) and value of %zu (at most 255)", t->string, strlen(t->string),
				       strlen(t->valuestring));
		p->tags[p->n_tags].key = xstrdup(t->string);
		p->tags[p->n_tags++].value = xstrdup(t->valuestring);
	}
	return 0;
}

static int parse_deletion_policy(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	bool retain = false;
	int r = get_either(spec, "deletionPolicy", "Delete", "Retain", &retain, err);
	if (r == 0 && retain)
		p->deletion_policy = POOL_RETAIN;
	return r;
}

static int parse_charge_type(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	int r;
	if ((r = get_string(spec, "spec", "instanceChargeType", false, 32, &p->charge_type, err)) < 0)
		return r;
	if (!p->charge_type)
		p->charge_type = xstrdup("SPOTPAID");
	if (strcmp(p->charge_type, "SPOTPAID") != 0 && strcmp(p->charge_type, "POSTPAID_BY_HOUR") != 0)
		return sp_fail(err, SP_EINVAL, "spec.instanceChargeType: must be SPOTPAID or "
			       "POSTPAID_BY_HOUR, got \"%.32s\"", p->charge_type);
	return 0;
}

static int parse_max_price(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	int r;
	if ((r = get_string(spec, "spec", "maxPrice", false, 16, &p->max_price, err)) < 0)
		return r;
	if (p->max_price && !is_decimal(p->max_price))
		return sp_fail(err, SP_EINVAL, "spec.maxPrice: \"%s\" is not a decimal price such as \"1.5\"",
			       p->max_price);
	return 0;
}

static int parse_bandwidth(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	p->internet_max_bandwidth_out = 10;
	return get_int(spec, "spec", "internetMaxBandwidthOut", false, 0, 200,
		       &p->internet_max_bandwidth_out, NULL, err);
}

static int parse_system_disk(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	int r;
	const cJSON *disk = cJSON_GetObjectItemCaseSensitive(spec, "systemDisk");
	if (!disk || cJSON_IsNull(disk))
		return 0;
	if (!cJSON_IsObject(disk))
		return sp_fail(err, SP_EINVAL, "spec.systemDisk: must be an object, got %s", pool_json_type(disk));
	const cJSON *f;
	cJSON_ArrayForEach(f, disk)
		if (strcmp(f->string, "diskType") != 0 && strcmp(f->string, "diskSize") != 0)
			return pool_unknown_field(err, "spec.systemDisk", f->string,
					     (const char *const[]){"diskType", "diskSize", NULL});
	if ((r = get_string(disk, "spec.systemDisk", "diskType", false, 32, &p->system_disk_type, err)) < 0)
		return r;
	return get_int(disk, "spec.systemDisk", "diskSize", false, 20, 32000, &p->system_disk_size, NULL, err);
}

static int parse_key_ids(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	return get_string_list(spec, "spec", "keyIds", "skey-", 1, &p->key_ids, err);
}

static int parse_user_data(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	int r;
	if ((r = get_string(spec, "spec", "userData", false, POOL_USER_DATA_MAX, &p->user_data, err)) < 0)
		return r;
	if (p->user_data && !is_base64(p->user_data))
		return sp_fail(err, SP_EINVAL, "spec.userData: must be base64-encoded");
	return 0;
}

int64_t pool_parse_duration(const char *s)
{
	int64_t total = 0;
	if (!*s)
		return -1;
	while (*s) {
		size_t digits = strspn(s, "0123456789");
		if (digits == 0 || digits > 5 || !s[digits] || !strchr("hms", s[digits]))
			return -1;
		/* A unit adds at most 99999h (3.6e8 s) per 6 characters: no string that fits in
		 * memory (150 GB) reaches int64's range. */
		int64_t n = strtol(s, NULL, 10);
		total += n * (s[digits] == 'h' ? 3600 : s[digits] == 'm' ? 60 : 1);
		s += digits + 1;
	}
	return total;
}

void pool_format_duration(int64_t s, char *buf, size_t n)
{
	int64_t h = s / 3600, m = s / 60 % 60, sec = s % 60;
	int used = 0;
	if (h)
		used = snprintf(buf, n, "%lldh", (long long)h);
	if (m && used >= 0 && (size_t)used < n)
		used += snprintf(buf + used, n - (size_t)used, "%lldm", (long long)m);
	if ((sec || !used) && used >= 0 && (size_t)used < n)
		snprintf(buf + used, n - (size_t)used, "%llds", (long long)sec);
}

/* A duration field of obj at path (drainTimeout's form) within [lo, hi] seconds, else
 * dflt when absent; *ret is dflt on failure too. */
static int get_duration(const cJSON *obj, const char *path, const char *field, int64_t dflt, int64_t lo,
			int64_t hi, int64_t *ret, struct sp_error *err)
{
	char *v = NULL;
	int r = get_string(obj, path, field, false, 24, &v, err);
	*ret = dflt;
	if (r < 0 || !v)
		return r;
	int64_t t = pool_parse_duration(v);
	if (t < 0)
		r = sp_fail(err, SP_EINVAL, "%s.%s: \"%s\" is not a duration such as 10m, 90s or 1h30m", path, field, v);
	else if (t > hi)
		r = sp_fail(err, SP_EINVAL, "%s.%s: \"%s\" is longer than %lldh", path, field, v, (long long)hi / 3600);
	else if (t < lo)
		r = sp_fail(err, SP_EINVAL, "%s.%s: \"%s\" is shorter than %llds", path, field, v, (long long)lo);
	else
		*ret = t;
	free(v);
	return r;
}

static int parse_drain(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	return get_duration(spec, "spec", "drainTimeout", POOL_DRAIN_TIMEOUT_DEFAULT, 0, POOL_DRAIN_TIMEOUT_MAX,
			    &p->drain_timeout, err);
}

/* A boolean field of obj at path; false when absent. */
static int get_bool(const cJSON *obj, const char *path, const char *field, bool *ret, struct sp_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return sp_fail(err, SP_EINVAL, "%s.%s: must be true or false, got %s", path, field, pool_json_type(v));
	*ret = cJSON_IsTrue(v);
	return 0;
}

static int parse_autoscaling(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	static const char *const known[] = {"pendingPods", "scaleDownUnneededTime", "nodeRegistrationTimeout", NULL};
	struct pool_autoscaling *a = &p->autoscaling;
	const char *path = "spec.autoscaling";
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, "autoscaling");
	a->unneeded_time = POOL_UNNEEDED_TIME_DEFAULT;
	a->registration_timeout = POOL_REGISTRATION_TIMEOUT_DEFAULT;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return sp_fail(err, SP_EINVAL, "%s: must be an object, got %s", path, pool_json_type(v));
	const cJSON *f;
	cJSON_ArrayForEach(f, v)
		if (strcmp(f->string, known[0]) && strcmp(f->string, known[1]) && strcmp(f->string, known[2]))
			return pool_unknown_field(err, path, f->string, known);
	int r;
	if ((r = get_bool(v, path, "pendingPods", &a->pending_pods, err)) < 0 ||
	    (r = get_duration(v, path, "scaleDownUnneededTime", POOL_UNNEEDED_TIME_DEFAULT, 0,
			      POOL_AUTOSCALING_TIME_MAX, &a->unneeded_time, err)) < 0 ||
	    (r = get_duration(v, path, "nodeRegistrationTimeout", POOL_REGISTRATION_TIMEOUT_DEFAULT, 1,
			      POOL_AUTOSCALING_TIME_MAX, &a->registration_timeout, err)) < 0)
		return r;
	a->enabled = true;
	return 0;
}

static int parse_node_template(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	return tmpl_parse(cJSON_GetObjectItemCaseSensitive(spec, "nodeTemplate"), &p->node_template, err);
}

static int parse_doomed(const cJSON *spec, struct pool_spec *p, struct sp_error *err)
{
	return get_bool(spec, "spec", "maximumIncludesDoomed", &p->maximum_includes_doomed, err);
}

typedef int (*spec_check)(const cJSON *spec, struct pool_spec *p, struct sp_error *err);

/* Runs each check, recording every failure. */
static void run_checks(const spec_check *checks, size_t n, const cJSON *spec, struct pool_spec *p,
		       struct pool_errors *errs)
{
	for (size_t i = 0; i < n; i++) {
		struct sp_error e = {0};
		noted(errs, checks[i](spec, p, &e), &e);
	}
}

static int check_header(const cJSON *obj, struct sp_error *err)
{
	if (!cJSON_IsObject(obj))
		return sp_fail(err, SP_EINVAL, "the document is not an object");
	const cJSON *api = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
	if (!cJSON_IsString(api) || strcmp(api->valuestring, POOL_API_VERSION) != 0)
		return sp_fail(err, SP_EINVAL, "apiVersion: must be %s", POOL_API_VERSION);
	if (!cJSON_IsString(kind) || strcmp(kind->valuestring, POOL_KIND) != 0)
		return sp_fail(err, SP_EINVAL, "kind: must be %s", POOL_KIND);
	return 0;
}

/* Notes every field of obj (at path) that is not in known (NULL-terminated). */
static void check_known_fields(const cJSON *obj, const char *path, const char *const *known,
			       struct pool_errors *errs)
{
	struct sp_error e = {0};
	const cJSON *f;
	cJSON_ArrayForEach(f, obj) {
		size_t i = 0;
		while (known[i] && strcmp(f->string, known[i]) != 0)
			i++;
		if (!known[i])
			noted(errs, pool_unknown_field(&e, path, f->string, known), &e);
	}
}

/* Checks in the order a reader of the spec meets the fields, so the first error reported
 * by pool_spec_from_object stays the one it always was. */
static void check_spec(const cJSON *spec, struct pool_spec *p, struct pool_errors *errs)
{
	static const spec_check placement[] = {
		parse_credentials, parse_zone, parse_instance_type, parse_image, parse_network,
		parse_security_groups, parse_zones, parse_instance_types, parse_allocation,
	};
	static const spec_check launch[] = {
		parse_charge_type, parse_max_price, parse_bandwidth, parse_system_disk, parse_key_ids,
		parse_user_data, parse_tags, parse_deletion_policy, parse_drain, parse_doomed,
		parse_autoscaling, parse_node_template,
	};
	check_known_fields(spec, "spec", known_spec_fields, errs);
	run_checks(placement, sizeof(placement) / sizeof(placement[0]), spec, p, errs);
	check_size(spec, p, errs);
	run_checks(launch, sizeof(launch) / sizeof(launch[0]), spec, p, errs);
}

int pool_spec_check(const cJSON *obj, const char *default_namespace, struct pool_spec **ret_spec,
		    struct pool_errors *errs)
{
	struct sp_error e = {0};
	errs->n = errs->more = 0;
	if (!noted(errs, check_header(obj, &e), &e) && !cJSON_IsObject(obj))
		return SP_EINVAL;
	static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
	check_known_fields(obj, "", top, errs);
	struct pool_spec *p = xcalloc(1, sizeof(*p));
	noted(errs, parse_metadata(obj, default_namespace, p, &e), &e);
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	if (!cJSON_IsObject(spec))
		noted(errs, sp_fail(&e, SP_EINVAL, "spec: required object is missing"), &e);
	else
		check_spec(spec, p, errs);
	if (errs->n > 0) {
		pool_spec_free(p);
		return SP_EINVAL;
	}
	*ret_spec = p;
	return 0;
}

int pool_spec_from_object(const cJSON *obj, const char *default_namespace,
			  struct pool_spec **ret_spec, struct sp_error *err)
{
	struct pool_errors *errs = xmalloc(sizeof(*errs));
	int r = pool_spec_check(obj, default_namespace, ret_spec, errs);
	if (r < 0 && err)
		*err = errs->v[0];
	free(errs);
	return r;
}

int pool_spec_for_cleanup(const cJSON *obj, const char *default_namespace,
			  struct pool_spec **ret_spec, struct sp_error *err)
{
	struct pool_spec *p = xcalloc(1, sizeof(*p));
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	int r = parse_metadata(obj, default_namespace, p, err);
	if (r == 0 && !cJSON_IsObject(spec))
		r = sp_fail(err, SP_EINVAL, "spec: required object is missing");
	if (r == 0 && (r = parse_credentials(spec, p, err)) == 0 && (r = parse_region(spec, p, err)) == 0)
		r = parse_deletion_policy(spec, p, err);
	/* Deleting drains the nodes first; a drainTimeout that no longer validates drains
	 * for the default rather than holding the pool. */
	if (r == 0)
		parse_drain(spec, p, NULL);
	if (r < 0) {
		pool_spec_free(p);
		return r;
	}
	*ret_spec = p;
	return 0;
}

void pool_spec_free(struct pool_spec *p)
{
	if (!p)
		return;
	free(p->namespace);
	free(p->name);
	free(p->uid);
	free(p->secret_id);
	sp_secure_free(p->secret_key);
	free(p->credentials_secret);
	free(p->region);
	free(p->zone);
	free(p->instance_type);
	strv_clear(&p->zones);
	strv_clear(&p->instance_types);
	free(p->vpc_id);
	free(p->subnet_id);
	strv_clear(&p->security_group_ids);
	free(p->image_id);
	free(p->charge_type);
	free(p->max_price);
	free(p->system_disk_type);
	strv_clear(&p->key_ids);
	free(p->user_data);
	for (size_t i = 0; i < p->n_tags; i++) {
		free(p->tags[i].key);
		free(p->tags[i].value);
	}
	free(p->tags);
	tmpl_clear(&p->node_template);
	free(p);
}

/* Hex digits of SHA-256 that stand for a name too long to write out: 128 bits. */
#define DIGEST_HEX 32

/* The first `keep` characters of s, sep and DIGEST_HEX hex digits of SHA-256(s). */
static char *prefix_and_digest(const char *s, size_t keep, char sep)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	char hex[DIGEST_HEX + 1];
	SHA256((const unsigned char *)s, strlen(s), md);
	sp_hex(md, DIGEST_HEX / 2, hex);
	return xasprintf("%.*s%c%s", (int)keep, s, sep, hex);
}

char *pool_owner_tag(const char *namespace, const char *name)
{
	char *owner = xasprintf("%s/%s", namespace, name);
	if (strlen(owner) <= POOL_TAG_VALUE_MAX)
		return owner;
	char *tag = prefix_and_digest(owner, POOL_TAG_VALUE_MAX - 1 - DIGEST_HEX, '#');
	free(owner);
	return tag;
}

char *pool_tag_value(const struct pool_spec *spec)
{
	return pool_owner_tag(spec->namespace, spec->name);
}

char *pool_label_value(const char *name)
{
	if (strlen(name) <= POOL_LABEL_VALUE_MAX)
		return xstrdup(name);
	/* A name's characters are label characters; the digest ends it alphanumerically. */
	return prefix_and_digest(name, POOL_LABEL_VALUE_MAX - 1 - DIGEST_HEX, '-');
}

int64_t pool_json_int64(const cJSON *v)
{
	/* Converting a double outside int64's range is undefined behaviour. */
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble < 9223372036854775808.0))
		return 0;
	return (int64_t)v->valuedouble;
}

int pool_clamp(int value, int minimum, int maximum)
{
	return value < minimum ? minimum : value > maximum ? maximum : value;
}

bool pool_has_finalizer(const cJSON *obj)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(
			       cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "finalizers"))
		if (cJSON_IsString(f) && strcmp(f->valuestring, POOL_FINALIZER) == 0)
			return true;
	return false;
}
