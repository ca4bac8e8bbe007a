#!/usr/bin/env python3
"""Stateful, signature-verifying emulator of the Tencent Cloud CVM API (2017-03-12), and of
the one STS call spotpool makes (GetCallerIdentity, 2018-08-13).

Why it exists: the real cloud cannot be reached from the test machines, and no public
emulator exists. The end-to-end tests point the spotpool C client at this server over
real HTTP. It verifies TC3-HMAC-SHA256 with its own implementation (hashlib/hmac only),
so a bug in the C signer cannot hide behind a shared one. It keeps instance state,
models eventual consistency, spot reclaim, capacity and throttling, and can inject
faults; its control API lets tests arrange a scenario and then prove the invariants of
docs/how-it-works.md, "Invariants" (journal of every call, per-tag high-water mark of
live instances).
Python 3.11 standard library only.

Running
-------
    python3 tests/cvm_emulator.py [--host 127.0.0.1] [--port 0] [--port-file FILE]
        [--secret-id ID --secret-key KEY [--token TOK]] [--credentials-file FILE]
        [--pending-seconds 2.0] [--terminating-seconds 1.0] [--journal FILE] [--quiet]
        [--seed N]
    python3 tests/cvm_emulator.py --self-test

--port 0 picks a free port. Once listening, the port number is written to --port-file
(tmp file + rename, so a reader never sees a partial number) and
"cvm-emulator listening on http://HOST:PORT" is printed to stdout. --credentials-file
holds a JSON list of {"secretId", "secretKey", "token"?, "account"?}. Credentials belong to
the account "main" (so rotating credentials sees the same instances) unless given another
"account" (in the file or through the control API): an account sees, terminates and
replays the client tokens of its own instances only, as two Tencent accounts would (the
others' answer InvalidInstanceId.NotFound; stock and quota stay global). Access logs go to stderr, one
line per request (--quiet turns them off); they and the journal name secret ids only,
never keys or tokens (a malformed Authorization header, which holds neither, is quoted
in the access log to show what the client sent). --seed N seeds instance ids and
tag-index drop draws, so a run is reproducible as far as request timing allows.
SIGTERM/SIGINT stop the server with exit status 0. --self-test checks the signer
against the three official worked examples and exits 0 or 1.

Cloud API (POST /, JSON body)
-----------------------------
Actions: DescribeInstances, DescribeInstancesStatus, RunInstances, TerminateInstances,
DescribeInstanceTypeConfigs (service cvm), and GetCallerIdentity (service sts). Both
services answer on the same port; the service is the one the request is signed for
(the credential scope), as the host would say on the real cloud. Every answer is HTTP 200
with {"Response": {..., "RequestId"}}; errors carry Response.Error {Code, Message}.
Checks, in order (the first failure answers):
  1. Authorization "TC3-HMAC-SHA256 Credential=<id>/<date>/<cvm|sts>/tc3_request,
     SignedHeaders=<lower-case names, sorted, ';'-joined>, Signature=<64 hex>", with
     content-type and host signed and present           AuthFailure.InvalidAuthorization
  2. X-TC-Timestamp present (MissingParameter), an integer (InvalidParameterValue),
     within 300 s of now                                 AuthFailure.SignatureExpire
  3. credential date == UTC date of the timestamp        AuthFailure.SignatureFailure
  4. secret id known                                     AuthFailure.SecretIdNotFound
  5. signature (canonical headers built from the received values, trimmed and
     lower-cased; host exactly as received)              AuthFailure.SignatureFailure
  6. X-TC-Token equals the credential's token (a credential without a token rejects a
     non-empty X-TC-Token)                               AuthFailure.TokenFailure
  -- calls that get this far are journaled --
  7. X-TC-Version present (MissingParameter) and 2017-03-12 (sts: 2018-08-13)  NoSuchVersion
  8. X-TC-Action present (MissingParameter) and the service's      InvalidAction
  9. X-TC-Region present (MissingParameter), shaped like ap-xxx    UnsupportedRegion
 10. Content-Type application/json (any parameters), body a JSON object  InvalidParameter
 11. token bucket per (secret id, action): Run/Terminate 10/s, DescribeInstances 40/s,
     DescribeInstancesStatus 40/s (a bucket of its own), DescribeInstanceTypeConfigs 10/s
                                                         RequestLimitExceeded
 12. injected faults (control API), then the action itself. Parameters are checked
     against the SDK models: an unknown parameter (also inside Placement,
     InstanceMarketOptions, SpotOptions, InternetAccessible, VirtualPrivateCloud,
     TagSpecification, Tags, Filters) is UnknownParameter, a wrong JSON type is
     InvalidParameter; null counts as absent.

DescribeInstances: InstanceIds (<= 100, ins-xxxxxxxx) or Filters (not both), Offset
(default 0), Limit (default 20, 1..100). Filters: tag:<key>, tag-key, tag-value, zone,
instance-id, instance-type, instance-charge-type, instance-state, instance-name; names
AND, values within a filter OR; <= 10 filters, <= 5 values each. Only the request's
region; only instances whose visibility delay (fault invisibleSeconds) has passed, also
when asked by id (the delay is also the one thing that hides an instance from an id
lookup). Order: CreatedTime (second precision) then InstanceId. Answers
TotalCount (all matches) and InstanceSet (the page). PublicIpAddresses is null until the
instance is RUNNING, and always when no public IP was asked for (InternetAccessible
PublicIpAssigned false, or InternetMaxBandwidthOut 0 or absent).
Tag index (docs/how-it-works.md, "Visibility"): a listing with a tag filter (tag:<key>,
tag-key, tag-value) is answered from a lagging, non-monotonic index. An instance enters
it tagIndexLagSeconds after creation (config, or the RunInstances fault of that name);
an indexed instance drops out with probability tagIndexDropProbability, drawn per
instance and per listing, for tagIndexDropSeconds, then comes back. TotalCount counts
what the index shows; the journal entry says "indexHidden": n. Lookups by InstanceIds
and listings without a tag filter bypass the index, and once an instance has been
returned by any DescribeInstances, a lookup by id keeps finding it until it is gone.

GetCallerIdentity (sts, SDK sts/v20180813 models.go): no parameters (any is
UnknownParameter); answers Arn ("qcs::cam::uin/<uin>:uin/<uin>"), AccountId, UserId and
PrincipalId (the uin) and Type "RootAccount", where the uin is the credentials'
account's: the same for every key of one account ("main" and each other "account" of
the credentials file or control API get their own, stable across runs). Throttled at
20/s per secret id; the control API's faults, hooks and throttling take its name ("*"
means every CVM action, not this one).

DescribeInstancesStatus (SDK models.go): InstanceIds (<= 100, else InvalidParameterValue.
LimitExceeded; ins-xxxxxxxx, else InvalidInstanceId.Malformed), Offset (default 0),
Limit (default 20, 1..100); no InstanceIds: every instance of the region. Answers
TotalCount and InstanceStatusSet [{InstanceId, InstanceState}] in DescribeInstances'
order. An unknown id (never created, gone, or inside its visibility delay) is simply
absent: the SDK lists no NotFound error for this action. No tag index: it reads the
instances themselves.

RunInstances: requires Placement.Zone (in the request's region), ImageId (img-...),
InstanceType (FAMILY.SIZE). InstanceChargeType SPOTPAID or POSTPAID_BY_HOUR (default);
SPOTPAID requires InstanceMarketOptions.MarketType "spot" (stricter than the real API,
which would bid at the default price; the client must send it), SpotOptions.MaxPrice a
positive decimal string, SpotInstanceType "one-time". InstanceCount 1..100 (default 1).
ClientToken <= 64 ASCII. InstanceName <= 60 chars (several instances get suffixes 1..n).
UserData valid base64, <= 16 KiB. TagSpecification entries of ResourceType "instance"
become the instance tags. DryRun true runs every check, including stock and quota, and
answers only RequestId, creating nothing and not recording the ClientToken.
Idempotency: a ClientToken seen before (one account) returns the first InstanceIdSet and
creates nothing, even if those instances are gone since; this holds even if the other
parameters differ (then the journal entry says "paramsDiffer": true and stderr warns).
Only successful launches record a token, so a retry after an error is a fresh launch.
Capacity: instances in LIVE states (PENDING, RUNNING, STARTING, REBOOTING) count against
stock rules (per zone/instance type, "*" matches any; error code configurable, default
ResourceInsufficient.SpecifiedInstanceType) and the account spot quota (live SPOTPAID
instances; default code LimitExceeded.SpotQuota). A launch is all or nothing. New
instances are PENDING for --pending-seconds, then RUNNING (or LAUNCH_FAILED).

DescribeInstanceTypeConfigs (SDK models.go): Filters zone, instance-family, instance-type
(<= 10 filters, <= 5 values each; values within a filter OR, filters AND). Answers
InstanceTypeConfigSet [{Zone, InstanceType, InstanceFamily, GPU, CPU, Memory (GiB), FPGA,
GpuCount, GpuType?}] from the catalogue: TYPE_CATALOGUE (GPU types of the GN7 (T4) and
GN10Xp (V100) families, a vGPU type whose GpuCount is a share of one card, the S5 types
the tests launch) plus what POST /_emulator/instance-types adds, each listed once per zone:
<region>-1 to -4, or the zones of the region a zone filter names. RunInstances does not
consult it (any FAMILY.SIZE launches).

TerminateInstances: InstanceIds 1..100 (MissingParameter / InvalidParameterValue.
LimitExceeded / InvalidInstanceId.Malformed). The whole call fails if any id is unknown
in the region or still inside its visibility delay (InvalidInstanceId.NotFound: a
NotFound does not prove an instance gone), already TERMINATING (UnsupportedOperation.
InstanceStateTerminating), or the ids mix charge types (UnsupportedOperation.
InstanceMixedPricingModel). Otherwise all become TERMINATING and vanish after
--terminating-seconds. Any other state may be terminated (PENDING, LAUNCH_FAILED, ...).

Control API (unsigned JSON on the same port, under /_emulator/)
----------------------------------------------------------------
Bad input answers HTTP 400 {"ok": false, "error": "..."}; unknown paths 404.
  GET  /_emulator/health                  {"ok": true}
  POST /_emulator/reset                   clears instances, client tokens, faults, stock,
                                          quota, throttle settings (back to defaults),
                                          journal and stats; keeps credentials and config
  POST /_emulator/credentials             {"secretId","secretKey","token"?,"account"?="main"}
                                          adds/replaces;
                                          {"secretId","remove": true} removes (revokes: a
                                          later call signed with it is answered
                                          AuthFailure.SecretIdNotFound, and the access log
                                          line says "revoked-sid=<id>")
  POST /_emulator/config                  {"pendingSeconds"?, "terminatingSeconds"?,
                                          "tagIndexLagSeconds"?=0, "tagIndexDropProbability"?
                                          =0 (0..1), "tagIndexDropSeconds"?=5, "seed"?,
                                          "addressBase"?}; the lag applies to instances
                                          created afterwards (also by POST /_emulator/
                                          instances); addresses given from then on count
                                          up from addressBase (10.<base/65536>.x.y), so
                                          emulators whose instances join one cluster
                                          as Nodes keep apart
  GET  /_emulator/instances[?region=R]    JSON list of every instance (also invisible and
                                          TERMINATING, every account), Describe fields plus
                                          region, account,
                                          clientToken, launchedBy (User-Agent), secretId,
                                          visible, visibleAfter, indexedAfter,
                                          indexDroppedUntil, seen, launchFail
  POST /_emulator/instances               {"region", "zone"?=<region>-1, "instanceType"?=
                                          S5.MEDIUM4, "state"?=RUNNING, "tags"?: [{Key,
                                          Value}], "count"?=1, "chargeType"?=SPOTPAID,
                                          "publicIp"?=true, "account"?="main"} -> {"ok", "instanceIds"};
                                          no stock/quota checks, not counted as launched
  POST /_emulator/reclaim                 {"instanceIds": [...]} or {"tag": {"Key","Value"},
                                          "count"?=1, "region"?} (the n newest live
                                          matches); "shutdown": true leaves them SHUTDOWN
                                          instead of removing them -> {"ok", "reclaimed"}.
                                          With "noticeSeconds": N the reclaim is announced
                                          now (the instances' spot/termination-time, see
                                          Instance metadata) and done N s later, as above
                                          (unless the instance is TERMINATING by then; a
                                          "_reclaimed" journal entry records it) -> {"ok",
                                          "announced", "reclaimAt" (epoch s),
                                          "terminationTime" (what the metadata answers)}
  POST /_emulator/terminate               {"instanceIds": [...], "account"} -> {"ok",
                                          "terminating"}: the account's owner terminating
                                          them in the console (TERMINATING, then gone; a
                                          "_terminate" journal entry); each must be an
                                          instance of that account, not yet terminating
  POST /_emulator/notice                  {"instanceIds": [...], "cancel": true}: an
                                          announced reclaim does not happen and the notice
                                          is withdrawn (termination-time answers 404 again)
                                          -> {"ok", "cancelled" (those that had a notice)}
  POST /_emulator/stock                   {"zone", "instanceType", "count": n|null,
                                          "errorCode"?, "message"?}; "*" matches any
  POST /_emulator/quota                   {"spot": n|null, "errorCode"?}
  POST /_emulator/fault                   one of the kinds below, with "action": one of
                                          the actions or "*", "times"?=1 (-1: until
                                          cleared) -> {"ok", "faultId"}; {"clear": true}
  GET  /_emulator/faults                  JSON list of pending faults
  POST /_emulator/killhook                {"action": A|"*", "when": "before"|"after", "pid": N,
                                          "signal"?=9, "times"?=1 (-1: until cleared),
                                          "comm"?} -> {"ok", "hookId"}; {"clear": true}.
                                          With comm, the signal goes only to a pid whose
                                          /proc/PID/comm is comm (pids get reused). A matching
                                          call that gets past throttling makes the emulator
                                          signal pid, "before" performing the call (nothing
                                          done) or "after" performing it (faults included);
                                          either way the connection closes without a reply.
                                          The journal entry says "killed": {hookId, when,
                                          pid, signal, result}
  GET  /_emulator/killhooks               JSON list of pending kill hooks
  POST /_emulator/instance-types          {"instanceType", "cpu", "memory", "gpu"?=0,
                                          "gpuCount"?=gpu, "gpuType"?}: adds (or replaces)
                                          a type of the DescribeInstanceTypeConfigs
                                          catalogue, in every region; reset restores it
  POST /_emulator/throttle                {"action": A|"*", "perSecond": n|null (default)}
  GET  /_emulator/journal[?since=SEQ]     JSON list of entries (see below)
  GET  /_emulator/stats[?tagKey=K[&tagValue=V]][&history=1]
                                          {"ok", "live", "maxLive", "launched",
                                          "terminated", "reclaimed"} for instances with
                                          that tag (key only: any value; none: all);
                                          history=1 adds "history": [[epoch s, live], ...],
                                          one point per change of live (last 20000)

Instance metadata (unsigned GET on the same port, as the instance itself asks)
-----------------------------------------------------------------------------
The in-guest service http://metadata.tencentyun.com/latest/meta-data/ of every instance
is served under /metadata/<instance id>/latest/meta-data/ (an agent under test gets
--metadata-url http://HOST:PORT/metadata/<id>/latest/meta-data):
  instance-id              200 text/plain, the instance's id
  spot/termination-time    404 until a reclaim is announced (/_emulator/reclaim with
                           noticeSeconds), then 200 text/plain "YYYY-MM-DD HH:MM:SS", the
                           reclaim time in UTC+8 cut to the second, as Tencent documents
                           ("Querying the Reclamation Status of a Spot Instance"); 404
                           again after /_emulator/notice cancels it; a reclaim that left
                           the instance SHUTDOWN leaves the time in place
For an instance that does not exist (or no longer does) the connection closes without a
reply: its metadata service is gone with it.

Fault kinds. The first pending fault of each kind matching the action applies; a fault
is used up when it applies. Outcome kinds exclude each other (first match wins):
  "errorCode": X, "message"?   answer that error; nothing is done
  "httpStatus": N              answer HTTP N with an HTML (non-JSON) body; nothing done
  "malformed": true            answer 200 with truncated JSON; nothing done
  "applyThenFail": true, "drop"?  perform the call, then answer 503 (or, with "drop",
                               close the connection without a reply): the reply is lost
Modifier kinds, combinable with the above:
  "latencyMs": ms              process the call, then hold the reply for ms (no lock
                               held), so the client gets a stale answer late
  "invisibleSeconds": s        (RunInstances) instances of the launch stay out of
                               DescribeInstances for s seconds
  "launchFail": true           (RunInstances) instances of the launch end LAUNCH_FAILED
  "tagIndexLagSeconds": s      (RunInstances) instances of the launch enter the tag index
                               s seconds after creation (instead of the configured lag)
  "tagIndexLagOneSeconds": s   (RunInstances) the same for the launch's first instance
                               only: a launch the tag index shows in part
The RunInstances modifiers are used up only by a launch that creates instances.

Journal entries: {"seq", "time" (epoch s), "action", "secretId", "userAgent", "region",
"requestId", "error"? (code), "faults"? (kinds applied), "killed"? (kill hook)} plus
per action: Describe "instanceIds"? (asked), "filters"?, "offset", "limit", "totalCount",
"count" (returned), "indexHidden"?; Run "count", "zone", "instanceType", "clientToken"?, "dryRun"?, "instanceIds"
(launched or replayed), "replay"?, "paramsDiffer"?; Terminate "instanceIds". Control
mutations add entries whose action is "_" + endpoint ("_fault", "_reclaim", "_instances",
"_stock", ...; "_fault" and "_killhook" entries name the action they target as
"faultAction" / "hookAction"). With --journal FILE each entry is also appended as a
JSON line (reset appends a "_reset" line there).

Stats: "live" counts instances with the tag in LIVE states, invisible ones included;
"maxLive" is its high-water mark since the last reset, updated at every state change
(the proof of "never more than maximum"); "launched" counts instances created by
RunInstances, "terminated" those moved to TERMINATING by TerminateInstances,
"reclaimed" those reclaimed through the control API.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import heapq
import hmac
import json
import os
import random
import re
import signal
import string
import sys
import threading
import time
import traceback
import uuid
from collections import Counter, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

API_VERSION = "2017-03-12"
SERVICE = "cvm"
STS_SERVICE = "sts"
STS_API_VERSION = "2018-08-13"
ALGORITHM = "TC3-HMAC-SHA256"
MAX_SKEW_SECONDS = 300
MAX_BODY_BYTES = 10 * 1024 * 1024
JOURNAL_MAX_ENTRIES = 200_000

ACTIONS = ("DescribeInstances", "DescribeInstancesStatus", "RunInstances", "TerminateInstances",
           "DescribeInstanceTypeConfigs")
STS_ACTIONS = ("GetCallerIdentity",)
# Each service: its API version and actions.
SERVICES = {SERVICE: (API_VERSION, ACTIONS), STS_SERVICE: (STS_API_VERSION, STS_ACTIONS)}
# What faults, kill hooks and throttling name; "*" is every CVM action (STS's is named:
# it is asked once per SecretId, and a "*" fault is meant for the calls that act).
ALL_ACTIONS = ACTIONS + STS_ACTIONS
DEFAULT_RATES = {"DescribeInstances": 40.0, "DescribeInstancesStatus": 40.0, "RunInstances": 10.0,
                 "TerminateInstances": 10.0, "DescribeInstanceTypeConfigs": 10.0, "GetCallerIdentity": 20.0}
LIVE_STATES = frozenset({"PENDING", "RUNNING", "STARTING", "REBOOTING"})
ALL_STATES = LIVE_STATES | {"LAUNCH_FAILED", "STOPPING", "STOPPED", "SHUTDOWN", "TERMINATING"}
CHARGE_TYPES = ("SPOTPAID", "POSTPAID_BY_HOUR")
DEFAULT_STOCK_CODE = "ResourceInsufficient.SpecifiedInstanceType"
DEFAULT_QUOTA_CODE = "LimitExceeded.SpotQuota"
INSTANCE_ID_RE = re.compile(r"ins-[a-z0-9]{8}")
REGION_RE = re.compile(r"[a-z]+(?:-[a-z]+)+")
INSTANCE_TYPE_RE = re.compile(r"[A-Za-z0-9]+\.[A-Za-z0-9]+")
IMAGE_ID_RE = re.compile(r"img-[A-Za-z0-9]+")
DEFAULT_INSTANCE_NAME = "未命名"  # what the real API names an instance launched without a name

# ---------------------------------------------------------------------------------------
# TC3-HMAC-SHA256: an implementation independent of the C signer under test.
# ---------------------------------------------------------------------------------------


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hmac_sha256(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def derive_keys(secret_key: str, date: str, service: str = SERVICE) -> tuple[bytes, bytes, bytes]:
    """kDate, kService, kSigning: binary keys, each the HMAC of the next scope part."""
    k_date = hmac_sha256(("TC3" + secret_key).encode("utf-8"), date)
    k_service = hmac_sha256(k_date, service)
    return k_date, k_service, hmac_sha256(k_service, "tc3_request")


def canonical_request(headers: dict[str, str], signed: list[str], payload: bytes) -> str:
    """POST, "/", empty query, one "name:value" line per signed header, the signed names,
    and the payload hash. headers maps lower-case names to received values."""
    header_lines = "".join(f"{name}:{headers[name].strip().lower()}\n" for name in signed)
    return "\n".join(["POST", "/", "", header_lines, ";".join(signed), sha256_hex(payload)])


def string_to_sign(timestamp: int, date: str, hashed_canonical_request: str, service: str = SERVICE) -> str:
    return f"{ALGORITHM}\n{timestamp}\n{date}/{service}/tc3_request\n{hashed_canonical_request}"


def signature(secret_key: str, date: str, to_sign: str, service: str = SERVICE) -> str:
    k_signing = derive_keys(secret_key, date, service)[2]
    return hmac.new(k_signing, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def is_decimal(text: str) -> bool:
    """ASCII digits only: str.isdigit alone also accepts digits int() refuses."""
    return text.isascii() and text.isdigit()


def utc_date(timestamp: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(timestamp))


class ApiError(Exception):
    """A cloud API error: answered as HTTP 200 with Response.Error {Code, Message}."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Credential:
    secret_key: str
    token: str = ""
    account: str = "main"


AUTHORIZATION_RE = re.compile(
    r"TC3-HMAC-SHA256 Credential=(?P<secret_id>[^/\s,]+)/(?P<date>\d{4}-\d{2}-\d{2})/(?P<service>cvm|sts)/tc3_request,"
    r"\s*SignedHeaders=(?P<signed>[^,\s]+),\s*Signature=(?P<signature>[0-9a-f]{64})")


def verify_request(headers: dict[str, str], body: bytes, credentials: dict[str, Credential],
                   now: float) -> str:
    """Authenticate a request the way the cloud does; return its secret id or raise."""
    match = AUTHORIZATION_RE.fullmatch(headers.get("authorization", "").strip())
    if not match:
        raise ApiError("AuthFailure.InvalidAuthorization",
                       "Authorization must be 'TC3-HMAC-SHA256 Credential=<id>/<date>/<cvm|sts>/tc3_request,"
                       " SignedHeaders=<names>, Signature=<hex>'.")
    signed = match["signed"].split(";")
    if signed != sorted(set(signed)) or any(name != name.lower() for name in signed):
        raise ApiError("AuthFailure.InvalidAuthorization",
                       "SignedHeaders must be lower-case, unique and sorted.")
    if "content-type" not in signed or "host" not in signed:
        raise ApiError("AuthFailure.InvalidAuthorization", "SignedHeaders must include content-type and host.")
    absent = [name for name in signed if name not in headers]
    if absent:
        raise ApiError("AuthFailure.InvalidAuthorization", f"Signed header(s) {', '.join(absent)} not sent.")
    timestamp_text = headers.get("x-tc-timestamp")
    if timestamp_text is None:
        raise ApiError("MissingParameter", "The request is missing a required header `X-TC-Timestamp`.")
    if not is_decimal(timestamp_text.strip()):
        raise ApiError("InvalidParameterValue", "X-TC-Timestamp must be an integer number of seconds.")
    timestamp = int(timestamp_text)
    if abs(now - timestamp) > MAX_SKEW_SECONDS:
        raise ApiError("AuthFailure.SignatureExpire",
                       f"Signature expired: timestamp {timestamp} is {int(now - timestamp)} s from server time.")
    date = utc_date(timestamp)
    if match["date"] != date:
        raise ApiError("AuthFailure.SignatureFailure",
                       f"Credential date {match['date']} is not the UTC date {date} of the timestamp.")
    secret_id = match["secret_id"]
    credential = credentials.get(secret_id)
    if credential is None:
        raise ApiError("AuthFailure.SecretIdNotFound", f"The SecretId {secret_id} is not found.")
    hashed = sha256_hex(canonical_request(headers, signed, body).encode("utf-8"))
    service = match["service"]
    expected = signature(credential.secret_key, date, string_to_sign(timestamp, date, hashed, service), service)
    if not hmac.compare_digest(expected, match["signature"]):
        raise ApiError("AuthFailure.SignatureFailure",
                       "The provided credentials could not be validated. Please check your signature is correct.")
    if not hmac.compare_digest(credential.token.encode("utf-8"), headers.get("x-tc-token", "").encode("utf-8")):
        raise ApiError("AuthFailure.TokenFailure", "The X-TC-Token does not match the credential.")
    return secret_id


# ---------------------------------------------------------------------------------------
# Self-test against the official worked examples (reference/tc3-vectors.md).
# ---------------------------------------------------------------------------------------

VECTOR_BODY = rb'{"Limit": 1, "Filters": [{"Values": ["\u672a\u547d\u540d"], "Name": "instance-name"}]}'
VECTOR_BODY_SHA256 = "35e9c5b0e3ae67532d3c9f17ead6c90222632e5b1ff7f6e89887f1398934f064"
VECTOR_TIMESTAMP = 1551113065
VECTOR_DATE = "2019-02-25"
VECTOR_HEADERS = {"content-type": "application/json; charset=utf-8", "host": "cvm.tencentcloudapi.com",
                  "x-tc-action": "DescribeInstances", "x-tc-timestamp": str(VECTOR_TIMESTAMP),
                  "x-tc-version": API_VERSION, "x-tc-region": "ap-guangzhou"}
TC3_VECTORS = [
    {"name": "A", "secret_id": "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE",
     "secret_key": "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE", "signed": ["content-type", "host"],
     "hashed_canonical_request": "5ffe6a04c0664d6b969fab9a13bdab201d63ee709638e2749d62a09ca18d7031",
     "k_date": "d1308c81fe71cfd4e06437bbc067b2b8a3d2d8c0e375d547f15c41d5214b395a",
     "k_service": "3c7cb7c7795393edc14fd2e0e6434a518564b4504b88e94f5d11bf59ba3e7050",
     "k_signing": "ac658d5dde49e9bfdd14e04e062f66b05d9f637d44b8a8d845327d4a77f666b1",
     "signature": "72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168"},
    {"name": "B", "secret_id": "AKIDz8krbsJ5yKBZQpn74WFkmLPx3*******",
     "secret_key": "Gu5t9xGARNpq86cd98joQYCN3*******", "signed": ["content-type", "host"],
     "signature": "2230eefd229f582d8b1b891af7107b91597240707d778ab3738f756258d7652c"},
    {"name": "C", "secret_id": "AKID" + "*" * 32, "secret_key": "*" * 32,
     "signed": ["content-type", "host", "x-tc-action"],
     "hashed_canonical_request": "7019a55be8395899b900fb5564e4200d984910f34794a27cb3fb7d10ff6a1e84",
     "k_date": "da98fb70dcf6b112dc21038d1eeeb3a95c74b4dcb12c1131f864f6066bd02be0",
     "k_service": "8d70cbefb03939f929db64d32dc2ba89b1095620119fe3e050e2b18c5bd2752f",
     "k_signing": "b596b923aad85185e2d1f6659d2a062e0a86731226e021e61bfe06f7ed05f5af",
     "signature": "10b1a37a7301a02ca19a647ad722d5e43b4b3cff309d421d85b46093f6ab6c4f"},
]


def check_vector(vector: dict) -> list[str]:
    """Return the mismatches of one worked example (empty when it passes). Besides the
    signer's pieces, the full verifier must accept the example as a received request."""
    problems = []
    if sha256_hex(VECTOR_BODY) != VECTOR_BODY_SHA256:
        problems.append("body hash")
    hashed = sha256_hex(canonical_request(VECTOR_HEADERS, vector["signed"], VECTOR_BODY).encode("utf-8"))
    keys = dict(zip(("k_date", "k_service", "k_signing"), derive_keys(vector["secret_key"], VECTOR_DATE)))
    actual = {"hashed_canonical_request": hashed, **{name: key.hex() for name, key in keys.items()},
              "signature": signature(vector["secret_key"], VECTOR_DATE,
                                     string_to_sign(VECTOR_TIMESTAMP, VECTOR_DATE, hashed))}
    problems += [name for name, value in actual.items() if name in vector and vector[name] != value]
    headers = dict(VECTOR_HEADERS, authorization=(
        f"{ALGORITHM} Credential={vector['secret_id']}/{VECTOR_DATE}/cvm/tc3_request, "
        f"SignedHeaders={';'.join(vector['signed'])}, Signature={vector['signature']}"))
    try:
        verify_request(headers, VECTOR_BODY, {vector["secret_id"]: Credential(vector["secret_key"])},
                       VECTOR_TIMESTAMP)
    except ApiError as err:
        problems.append(f"verifier: {err.code}")
    return problems


def self_test() -> int:
    passed = failed = 0
    for vector in TC3_VECTORS:
        problems = check_vector(vector)
        if problems:
            failed += 1
            print(f"vector {vector['name']}: mismatch in {', '.join(problems)}", file=sys.stderr)
        else:
            passed += 1
    print(f"emulator tc3 self-test: {passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 else 1


# ---------------------------------------------------------------------------------------
# Request parameter schemas, after the SDK request models. A dict is an object whose
# keys are all known, [x] a list of x, OBJECT an object accepted without a look inside.
# ---------------------------------------------------------------------------------------

STRING, INTEGER, BOOLEAN, OBJECT = "string", "integer", "boolean", "object"
TAG = {"Key": STRING, "Value": STRING}
RUN_SCHEMA = {
    "InstanceChargeType": STRING, "InstanceChargePrepaid": OBJECT,
    "Placement": {"Zone": STRING, "ProjectId": INTEGER, "HostIds": [STRING], "HostIps": [STRING],
                  "DedicatedClusterId": STRING},
    "InstanceType": STRING, "ImageId": STRING, "SystemDisk": OBJECT, "DataDisks": [OBJECT],
    "VirtualPrivateCloud": {"VpcId": STRING, "SubnetId": STRING, "AsVpcGateway": BOOLEAN,
                            "PrivateIpAddresses": [STRING], "Ipv6AddressCount": INTEGER},
    "InternetAccessible": {"InternetChargeType": STRING, "InternetMaxBandwidthOut": INTEGER,
                           "PublicIpAssigned": BOOLEAN, "BandwidthPackageId": STRING,
                           "InternetServiceProvider": STRING, "IPv4AddressType": STRING,
                           "IPv6AddressType": STRING, "AntiDDoSPackageId": STRING},
    "InstanceCount": INTEGER, "InstanceName": STRING, "LoginSettings": OBJECT,
    "SecurityGroupIds": [STRING], "EnhancedService": OBJECT, "ClientToken": STRING, "HostName": STRING,
    "ActionTimer": OBJECT, "DisasterRecoverGroupIds": [STRING],
    "TagSpecification": [{"ResourceType": STRING, "Tags": [TAG]}],
    "InstanceMarketOptions": {"MarketType": STRING,
                              "SpotOptions": {"MaxPrice": STRING, "SpotInstanceType": STRING}},
    "UserData": STRING, "DryRun": BOOLEAN, "CamRoleName": STRING, "HpcClusterId": STRING,
    "LaunchTemplate": OBJECT, "DedicatedClusterId": STRING, "ChcIds": [STRING],
    "DisableApiTermination": BOOLEAN, "Metadata": OBJECT, "CpuTopology": OBJECT, "EnableJumboFrame": BOOLEAN,
}
DESCRIBE_SCHEMA = {"InstanceIds": [STRING], "Filters": [{"Name": STRING, "Values": [STRING]}],
                   "Offset": INTEGER, "Limit": INTEGER}
STATUS_SCHEMA = {"InstanceIds": [STRING], "Offset": INTEGER, "Limit": INTEGER}
TYPE_CONFIGS_SCHEMA = {"Filters": [{"Name": STRING, "Values": [STRING]}]}
TERMINATE_SCHEMA = {"InstanceIds": [STRING], "ReleaseNetworkResources": BOOLEAN,
                    "ReleasePrepaidDataDisk": BOOLEAN, "ReleaseAddress": BOOLEAN}
SCALAR_CHECKS = {
    STRING: lambda v: isinstance(v, str),
    INTEGER: lambda v: isinstance(v, int) and not isinstance(v, bool),
    BOOLEAN: lambda v: isinstance(v, bool),
    OBJECT: lambda v: isinstance(v, dict),
}


def check_schema(value, schema, path: str = "") -> None:
    """Reject unknown parameters (UnknownParameter) and wrong JSON types (InvalidParameter)."""
    if value is None:
        return
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            raise ApiError("InvalidParameter", f"The parameter `{path}` should be an object.")
        for key, item in value.items():
            name = f"{path}.{key}" if path else key
            if key not in schema:
                raise ApiError("UnknownParameter", f"The parameter `{name}` is not recognized.")
            check_schema(item, schema[key], name)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            raise ApiError("InvalidParameter", f"The parameter `{path}` should be an array.")
        for index, item in enumerate(value):
            check_schema(item, schema[0], f"{path}.{index}")
    elif not SCALAR_CHECKS[schema](value):
        raise ApiError("InvalidParameter", f"The parameter `{path}` should be of type {schema}.")


def matches(named: str, action: str) -> bool:
    """Whether a fault, hook or throttle naming named ("*": every CVM action) is action's."""
    return named == action or (named == "*" and action in ACTIONS)


def account_uin(account: str) -> str:
    """An emulator account's uin (its AccountId): 12 digits, stable across runs."""
    return str(100000000000 + int(sha256_hex(account.encode("utf-8"))[:12], 16) % 900000000000)


def parse_tags(specs: list | None) -> list[dict]:
    """Tags of TagSpecification entries with ResourceType "instance", checked as the tag
    service does (key 1..127 chars, value <= 255, no reserved prefix, no duplicates)."""
    tags: list[dict] = []
    for i, spec in enumerate(specs or []):
        if not spec.get("ResourceType"):
            raise ApiError("MissingParameter", f"The parameter `TagSpecification.{i}.ResourceType` is missing.")
        if spec["ResourceType"] != "instance":
            continue
        for j, tag in enumerate(spec.get("Tags") or []):
            where = f"TagSpecification.{i}.Tags.{j}"
            if tag.get("Key") is None or tag.get("Value") is None:
                raise ApiError("MissingParameter", f"The parameter `{where}` needs both Key and Value.")
            key, value = tag["Key"], tag["Value"]
            if not 1 <= len(key) <= 127:
                raise ApiError("FailedOperation.IllegalTagKey", f"`{where}.Key` must have 1 to 127 characters.")
            if key.startswith("qcloud:"):
                raise ApiError("FailedOperation.TagKeyReserved", f"`{where}.Key` uses the reserved prefix qcloud:.")
            if len(value) > 255:
                raise ApiError("FailedOperation.IllegalTagValue", f"`{where}.Value` is longer than 255 characters.")
            tags.append({"Key": key, "Value": value})
    keys = [tag["Key"] for tag in tags]
    if len(keys) != len(set(keys)):
        raise ApiError("InvalidParameterValue.DuplicateTags", "TagSpecification repeats a tag key.")
    return tags


def cpu_and_memory(instance_type: str) -> tuple[int, int]:
    """Plausible CPU/Memory from a type name such as GN7.2XLARGE32 (8 vCPU, 32 GB)."""
    match = re.fullmatch(r"[A-Z0-9]+\.(\d*)(SMALL|MEDIUM|LARGE|XLARGE)(\d+)", instance_type.upper())
    if not match:
        return 4, 8
    base = {"SMALL": 1, "MEDIUM": 2, "LARGE": 4, "XLARGE": 4}[match[2]]
    return base * int(match[1] or 1), int(match[3])


@dataclass(frozen=True)
class InstanceTypeConfig:
    """One type of the DescribeInstanceTypeConfigs catalogue (SDK InstanceTypeConfig)."""
    instance_type: str
    cpu: int
    memory: int              # GiB
    gpu: int = 0             # GPUs the instance has
    gpu_count: float = 0.0   # physical cards it maps: below 1 for a vGPU type
    gpu_type: str = ""

    def view(self, zone: str) -> dict:
        view = {"Zone": zone, "InstanceType": self.instance_type, "InstanceFamily": self.instance_type.split(".")[0],
                "GPU": self.gpu, "CPU": self.cpu, "Memory": self.memory, "FPGA": 0, "GpuCount": self.gpu_count}
        return {**view, "GpuType": self.gpu_type} if self.gpu_type else view


def s5(instance_type: str) -> InstanceTypeConfig:
    return InstanceTypeConfig(instance_type, *cpu_and_memory(instance_type))


# The GPU types as Tencent's GPU instance pages list them (GN7: NVIDIA T4; GN10Xp: V100);
# GN7vw.3XLARGE24 stands for a vGPU type (half a T4, one GPU to the instance).
TYPE_CATALOGUE = {t.instance_type: t for t in (
    InstanceTypeConfig("GN7.2XLARGE32", 8, 32, 1, 1.0, "NVIDIA T4"),
    InstanceTypeConfig("GN7.5XLARGE80", 20, 80, 1, 1.0, "NVIDIA T4"),
    InstanceTypeConfig("GN7.8XLARGE128", 32, 128, 1, 1.0, "NVIDIA T4"),
    InstanceTypeConfig("GN7.10XLARGE160", 40, 160, 2, 2.0, "NVIDIA T4"),
    InstanceTypeConfig("GN7.20XLARGE320", 80, 320, 4, 4.0, "NVIDIA T4"),
    InstanceTypeConfig("GN10Xp.2XLARGE40", 10, 40, 1, 1.0, "NVIDIA V100"),
    InstanceTypeConfig("GN10Xp.20XLARGE320", 80, 320, 8, 8.0, "NVIDIA V100"),
    InstanceTypeConfig("GN7vw.3XLARGE24", 12, 24, 1, 0.5, "NVIDIA T4"),
    s5("S5.SMALL1"), s5("S5.MEDIUM2"), s5("S5.MEDIUM4"), s5("S5.LARGE8"), s5("S5.2XLARGE16"),
)}
TYPE_FILTER_FIELDS = {
    "zone": lambda entry: [entry[0]],
    "instance-family": lambda entry: [entry[1].instance_type.split(".")[0]],
    "instance-type": lambda entry: [entry[1].instance_type],
}
CATALOGUE_ZONES = 4


# ---------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------


@dataclass
class Instance:
    instance_id: str
    region: str
    zone: str
    instance_type: str
    charge_type: str
    state: str
    created: float
    tags: list[dict]
    private_ip: str
    wants_public_ip: bool
    public_ip: str | None = None
    image_id: str = "img-emulated"
    name: str = DEFAULT_INSTANCE_NAME
    project_id: int = 0
    vpc_id: str = "vpc-default0"
    subnet_id: str = "subnet-default0"
    security_group_ids: list[str] = field(default_factory=list)
    bandwidth_out: int = 0
    internet_charge_type: str = "TRAFFIC_POSTPAID_BY_HOUR"
    system_disk: dict = field(default_factory=lambda: {"DiskType": "CLOUD_PREMIUM", "DiskSize": 50})
    key_ids: list[str] | None = None
    client_token: str | None = None
    launched_by: str | None = None
    secret_id: str | None = None
    account: str = ""                  # the launching credentials' account
    visible_after: float = 0.0
    index_after: float = 0.0           # enters tag-filtered listings (tag index lag)
    index_dropped_until: float = 0.0   # out of tag-filtered listings until then (index drop)
    seen: bool = False                 # returned by some DescribeInstances already
    launch_fail: bool = False
    boot_at: float = 0.0
    gone_at: float = 0.0
    reclaim_at: float = 0.0            # an announced reclaim happens then (0: none announced)
    reclaim_shutdown: bool = False     # ... leaving the instance SHUTDOWN instead of removed
    latest_operation: str | None = None
    latest_operation_state: str | None = None
    latest_request_id: str | None = None
    account: str = "main"
    created_time: str = field(init=False)

    def __post_init__(self) -> None:
        self.created_time = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.created))

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    def stat_keys(self) -> list[tuple]:
        """Stats buckets this instance belongs to: all, each tag key, each tag pair."""
        return ([(None, None)] + [(t["Key"], None) for t in self.tags]
                + [(t["Key"], t["Value"]) for t in self.tags])

    def tag_value(self, key: str) -> str | None:
        return next((t["Value"] for t in self.tags if t["Key"] == key), None)


@dataclass
class Fault:
    fault_id: int
    action: str
    kind: str
    value: object
    times: int
    message: str | None = None
    drop: bool = False

    def to_json(self) -> dict:
        return {"faultId": self.fault_id, "action": self.action, self.kind: self.value, "times": self.times,
                **({"message": self.message} if self.message else {}), **({"drop": True} if self.drop else {})}


OUTCOME_FAULTS = ("errorCode", "httpStatus", "malformed", "applyThenFail")
MODIFIER_FAULTS = ("latencyMs", "invisibleSeconds", "launchFail", "tagIndexLagSeconds", "tagIndexLagOneSeconds")
RUN_ONLY_FAULTS = ("invisibleSeconds", "launchFail", "tagIndexLagSeconds", "tagIndexLagOneSeconds")
TAG_FILTER_PREFIX = "tag:"
HISTORY_MAX = 20_000


def is_tag_filter(name: str) -> bool:
    """Filters answered from the tag index (which lags and drops entries)."""
    return (name.startswith(TAG_FILTER_PREFIX) and len(name) > len(TAG_FILTER_PREFIX)) or \
        name in ("tag-key", "tag-value")


@dataclass
class KillHook:
    """Send signal to pid when a matching cloud call arrives: "before" performing it
    (nothing done) or "after" performing it (done); the reply is never sent."""
    hook_id: int
    action: str
    when: str
    pid: int
    signal: int
    times: int
    comm: str | None = None

    def to_json(self) -> dict:
        return {"hookId": self.hook_id, "action": self.action, "when": self.when, "pid": self.pid,
                "signal": self.signal, "times": self.times, **({"comm": self.comm} if self.comm else {})}


def process_comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


class TokenBucket:
    """rate tokens per second, bursting up to max(rate, 1); rate 0 refuses everything."""

    def __init__(self, rate: float, now: float):
        self.rate = rate
        self.capacity = max(rate, 1.0) if rate > 0 else 0.0
        self.tokens = self.capacity
        self.stamp = now

    def take(self, now: float) -> bool:
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass
class Call:
    """What a cloud API handler knows about the request it serves."""
    region: str
    secret_id: str
    user_agent: str | None
    request_id: str
    now: float
    entry: dict
    account: str = "main"


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"
    delay: float = 0.0
    drop: bool = False
    summary: str = ""

    @staticmethod
    def json(status: int, payload, summary: str = "") -> Reply:
        return Reply(status, json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
                     summary=summary)

    @staticmethod
    def api(payload: dict, request_id: str, summary: str) -> Reply:
        return Reply.json(200, {"Response": {**payload, "RequestId": request_id}}, summary)

    @staticmethod
    def api_error(err: ApiError, request_id: str, summary: str) -> Reply:
        return Reply.api({"Error": {"Code": err.code, "Message": err.message}}, request_id, summary)

    @staticmethod
    def html(status: int, summary: str) -> Reply:
        return Reply(status, f"<html><body><h1>{status} upstream error</h1></body></html>\n".encode(),
                     "text/html", summary=summary)


class ControlError(Exception):
    """Bad control API input: answered as HTTP 400 {"ok": false, "error": ...}."""


def control_number(payload: dict, key: str, minimum: float = 0, integer: bool = False, default=None):
    value = payload.get(key, default)
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or value < minimum:
        raise ControlError(f"{key} must be a{'n integer' if integer else ' number'} >= {minimum}")
    return value


def control_string(payload: dict, key: str, default: str | None = None) -> str:
    value = payload.get(key, default)
    if not isinstance(value, str) or not value:
        raise ControlError(f"{key} must be a non-empty string")
    return value


def control_tags(value) -> list[dict]:
    if not isinstance(value, list) or not all(
            isinstance(t, dict) and isinstance(t.get("Key"), str) and isinstance(t.get("Value"), str)
            for t in value):
        raise ControlError("tags must be a list of {\"Key\": string, \"Value\": string}")
    return list({t["Key"]: {"Key": t["Key"], "Value": t["Value"]} for t in value}.values())


class Emulator:
    """All state behind one lock. Time-driven transitions (PENDING -> RUNNING or
    LAUNCH_FAILED, TERMINATING -> gone) are applied lazily from a timer heap at the start
    of every request, so each request sees state exactly as of its arrival."""

    def __init__(self, pending_seconds: float, terminating_seconds: float, journal_path: str | None,
                 seed: int | None = None):
        self.lock = threading.Lock()
        self.credentials: dict[str, Credential] = {}
        self.revoked: set[str] = set()  # secret ids removed through the control API
        self.pending_seconds = pending_seconds
        self.terminating_seconds = terminating_seconds
        self.tag_index_lag = 0.0
        self.tag_index_drop_probability = 0.0
        self.tag_index_drop_seconds = 5.0
        self._journal_file = open(journal_path, "a", encoding="utf-8") if journal_path else None
        self._issued_ids: set[str] = set()
        self._address_counter = 0
        self._seq = 0
        self._next_fault_id = 1
        self._random = random.Random(seed)
        self._index_random = random.Random(seed)
        self._next_hook_id = 1
        self._reset()

    def _reset(self) -> None:
        self.instances: dict[str, Instance] = {}
        self.client_tokens: dict[tuple[str, str], dict] = {}  # by (account, token)
        self.faults: list[Fault] = []
        self.kill_hooks: list[KillHook] = []
        self.stock: dict[tuple[str, str], dict] = {}
        self.spot_quota: dict | None = None
        self.type_catalogue: dict[str, InstanceTypeConfig] = dict(TYPE_CATALOGUE)
        self.rates = dict(DEFAULT_RATES)
        self.buckets: dict[tuple[str, str], TokenBucket] = {}
        self.journal: deque[dict] = deque(maxlen=JOURNAL_MAX_ENTRIES)
        self.live = Counter()
        self.max_live = Counter()
        self.live_history: dict[tuple, deque] = {}
        self.launched = Counter()
        self.terminated = Counter()
        self.reclaimed = Counter()
        self._timers: list[tuple[float, str, str]] = []
        self._query_cache: dict[tuple, list[Instance]] = {}

    def close(self) -> None:
        if self._journal_file:
            self._journal_file.close()

    # -- bookkeeping ----------------------------------------------------------------

    def _record(self, entry: dict, now: float) -> None:
        self._seq += 1
        entry = {"seq": self._seq, "time": round(now, 3), **entry}
        self.journal.append(entry)
        if self._journal_file:
            self._journal_file.write(json.dumps(entry, ensure_ascii=False) + "\n")
            self._journal_file.flush()

    def _new_instance_id(self) -> str:
        alphabet = string.ascii_lowercase + string.digits
        while True:
            candidate = "ins-" + "".join(self._random.choice(alphabet) for _ in range(8))
            if candidate not in self._issued_ids:
                self._issued_ids.add(candidate)
                return candidate

    def _next_address(self, first_octet: int) -> str:
        """A fresh address; one counter serves private (10.) and public (43.) ones."""
        while True:
            self._address_counter += 1
            n = self._address_counter
            if n & 255 not in (0, 255):
                return f"{first_octet}.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"

    def _changed(self) -> None:
        """Something DescribeInstances matches on changed: forget cached query results."""
        self._query_cache.clear()

    def _count_live(self, inst: Instance, delta: int) -> None:
        now = round(time.time(), 3)
        for key in inst.stat_keys():
            self.live[key] += delta
            self.max_live[key] = max(self.max_live[key], self.live[key])
            history = self.live_history.get(key)
            if history is None:
                history = self.live_history[key] = deque(maxlen=HISTORY_MAX)
            history.append((now, self.live[key]))

    def _add(self, inst: Instance) -> None:
        self.instances[inst.instance_id] = inst
        self._changed()
        if inst.live:
            self._count_live(inst, +1)
        if inst.visible_after:
            heapq.heappush(self._timers, (inst.visible_after, inst.instance_id, "visible"))
        if inst.state == "PENDING":
            heapq.heappush(self._timers, (inst.boot_at, inst.instance_id, "boot"))
        elif inst.state == "TERMINATING":
            heapq.heappush(self._timers, (inst.gone_at, inst.instance_id, "gone"))
        elif inst.state == "RUNNING" and inst.wants_public_ip:
            inst.public_ip = self._next_address(43)

    def _set_state(self, inst: Instance, state: str) -> None:
        """The one place a state changes, so live counters and maxLive never drift."""
        was_live = inst.live
        inst.state = state
        self._changed()
        if was_live != inst.live:
            self._count_live(inst, +1 if inst.live else -1)
        if state == "RUNNING" and inst.wants_public_ip and not inst.public_ip:
            inst.public_ip = self._next_address(43)

    def _remove(self, inst: Instance) -> None:
        if inst.live:
            self._count_live(inst, -1)
        del self.instances[inst.instance_id]
        self._changed()

    def _advance(self, now: float) -> None:
        while self._timers and self._timers[0][0] <= now:
            due, instance_id, kind = heapq.heappop(self._timers)
            inst = self.instances.get(instance_id)
            if inst is None:
                continue
            if kind == "boot" and inst.state == "PENDING" and inst.boot_at == due:
                self._set_state(inst, "LAUNCH_FAILED" if inst.launch_fail else "RUNNING")
                if inst.latest_operation == "RunInstances":
                    inst.latest_operation_state = "FAILED" if inst.launch_fail else "SUCCESS"
            elif kind == "gone" and inst.state == "TERMINATING" and inst.gone_at == due:
                self._remove(inst)
            elif kind == "reclaim" and inst.reclaim_at == due and inst.state != "TERMINATING":
                self._reclaim(inst, inst.reclaim_shutdown)
                self._record({"action": "_reclaimed", "instanceIds": [instance_id],
                              "shutdown": inst.reclaim_shutdown}, now)
            elif kind == "visible":
                self._changed()

    def _spawn(self, now: float, region: str, zone: str, instance_type: str, charge_type: str,
               tags: list[dict], state: str, wants_public_ip: bool, index_lag: float | None = None,
               **details) -> Instance:
        lag = self.tag_index_lag if index_lag is None else index_lag
        inst = Instance(instance_id=self._new_instance_id(), region=region, zone=zone,
                        instance_type=instance_type, charge_type=charge_type, state=state, created=now,
                        tags=tags, private_ip=self._next_address(10), wants_public_ip=wants_public_ip,
                        boot_at=now + self.pending_seconds, gone_at=now + self.terminating_seconds,
                        index_after=now + lag if lag else 0.0, **details)
        self._add(inst)
        return inst

    # -- cloud API --------------------------------------------------------------------

    def api(self, headers: dict[str, str], body: bytes) -> Reply:
        now = time.time()
        request_id = str(uuid.uuid4())
        action = headers.get("x-tc-action", "-")
        with self.lock:
            self._advance(now)
            try:
                secret_id = verify_request(headers, body, self.credentials, now)
            except ApiError as err:
                seen = ""
                if err.code == "AuthFailure.InvalidAuthorization":
                    # What was received (no secret in it: an id, a date, names, an HMAC).
                    seen = f" received {headers.get('authorization', '<none>')[:200]!r}"
                elif err.code == "AuthFailure.SecretIdNotFound":
                    # A secret id removed through the control API (a rotated, revoked key)
                    # is named, so a test can tell a late use of it from a malformed request.
                    match = AUTHORIZATION_RE.match(headers.get("authorization", ""))
                    if match and match["secret_id"] in self.revoked:
                        seen = f" revoked-sid={match['secret_id']}"
                return Reply.api_error(err, request_id, f"{action} {err.code}{seen}")
            service = AUTHORIZATION_RE.fullmatch(headers["authorization"].strip())["service"]
            entry = {"action": headers.get("x-tc-action"), "secretId": secret_id,
                     "userAgent": headers.get("user-agent"), "region": headers.get("x-tc-region"),
                     "requestId": request_id}
            if service != SERVICE:
                entry["service"] = service
            reply = self._serve(headers, body, secret_id, service, entry, request_id, now)
            self._record(entry, now)
        reply.summary += f" sid={secret_id}"
        return reply

    def _serve(self, headers: dict[str, str], body: bytes, secret_id: str, service: str, entry: dict,
               request_id: str, now: float) -> Reply:
        """Everything after authentication: header and body checks, throttling, faults,
        the action. Fills the journal entry as it goes."""
        action = headers.get("x-tc-action", "-")
        outcome = latency = None
        reached = False  # past throttling: the call is performed (or refused by a fault)
        try:
            action, region, params = self._check_request(headers, body, service)
            bucket = self.buckets.get((secret_id, action))
            if bucket is None:
                bucket = self.buckets[(secret_id, action)] = TokenBucket(self.rates[action], now)
            if not bucket.take(now):
                raise ApiError("RequestLimitExceeded",
                               f"Requests of {action} exceed the limit of {self.rates[action]:g} per second.")
            if self._fire_hook(action, "before", entry):
                return Reply(0, b"", drop=True, summary=f"{action} killed caller before (hook)")
            reached = True
            outcome = self._take_fault(action, OUTCOME_FAULTS)
            latency = self._take_fault(action, ("latencyMs",))
            entry["faults"] = [f.kind for f in (outcome, latency) if f]
            if outcome and outcome.kind == "errorCode":
                raise ApiError(outcome.value, outcome.message or "Injected fault.")
            if outcome and outcome.kind == "httpStatus":
                reply = Reply.html(outcome.value, f"{action} HTTP {outcome.value} (fault)")
            elif outcome and outcome.kind == "malformed":
                reply = Reply(200, ('{"Response":{"RequestId":"%s","InstanceSet":[{' % request_id).encode(),
                              summary=f"{action} malformed (fault)")
            else:
                call = Call(region, secret_id, headers.get("user-agent"), request_id, now, entry,
                            self.credentials[secret_id].account)
                result = HANDLERS[action](self, params, call)
                reply = Reply.api(result, request_id, f"{action} OK")
        except ApiError as err:
            entry["error"] = err.code
            reply = Reply.api_error(err, request_id, f"{action} {err.code}")
        if not entry.get("faults"):
            entry.pop("faults", None)
        if outcome and outcome.kind == "applyThenFail":
            reply = (Reply(0, b"", drop=True, summary=f"{action} dropped (fault)") if outcome.drop
                     else Reply.html(503, f"{action} applied, HTTP 503 (fault)"))
        if latency:
            reply.delay = latency.value / 1000.0
        if reached and self._fire_hook(action, "after", entry):
            reply = Reply(0, b"", drop=True, summary=f"{action} done, killed caller after (hook)")
        return reply

    def _fire_hook(self, action: str, when: str, entry: dict) -> bool:
        """Use up the first matching kill hook: signal its pid and say so in the journal."""
        for hook in self.kill_hooks:
            if hook.when == when and matches(hook.action, action):
                if hook.times > 0:
                    hook.times -= 1
                    if hook.times == 0:
                        self.kill_hooks.remove(hook)
                comm = process_comm(hook.pid) if hook.comm else None
                try:
                    if hook.comm and comm != hook.comm:
                        outcome = f"not sent: pid {hook.pid} is {comm or 'gone'}, not {hook.comm}"
                    else:
                        os.kill(hook.pid, hook.signal)
                        outcome = "sent"
                except OSError as err:
                    outcome = err.strerror or str(err)
                entry["killed"] = {"hookId": hook.hook_id, "when": when, "pid": hook.pid,
                                   "signal": hook.signal, "result": outcome}
                print(f"cvm-emulator: kill hook {hook.hook_id}: signal {hook.signal} to pid {hook.pid} "
                      f"{when} {action}: {outcome}", file=sys.stderr, flush=True)
                return True
        return False

    def _check_request(self, headers: dict[str, str], body: bytes, service: str) -> tuple[str, str, dict]:
        api_version, actions = SERVICES[service]
        version = headers.get("x-tc-version")
        if version is None:
            raise ApiError("MissingParameter", "The request is missing a required header `X-TC-Version`.")
        if version != api_version:
            raise ApiError("NoSuchVersion", f"The API version `{version}` does not exist; use {api_version}.")
        action = headers.get("x-tc-action")
        if action is None:
            raise ApiError("MissingParameter", "The request is missing a required header `X-TC-Action`.")
        if action not in actions:
            raise ApiError("InvalidAction", f"The action `{action}` does not exist.")
        region = headers.get("x-tc-region")
        if region is None:
            raise ApiError("MissingParameter", "The request is missing a required header `X-TC-Region`.")
        if not REGION_RE.fullmatch(region):
            raise ApiError("UnsupportedRegion", f"The region `{region}` is not supported.")
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise ApiError("InvalidParameter", "Content-Type must be application/json.")
        try:
            params = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ApiError("InvalidParameter", "The request body is not valid UTF-8 JSON.") from None
        if not isinstance(params, dict):
            raise ApiError("InvalidParameter", "The request body must be a JSON object.")
        return action, region, params

    def _take_fault(self, action: str, kinds: tuple[str, ...]) -> Fault | None:
        """Use up the first pending fault of one of these kinds that matches the action."""
        for fault in self.faults:
            if fault.kind in kinds and matches(fault.action, action):
                if fault.times > 0:
                    fault.times -= 1
                    if fault.times == 0:
                        self.faults.remove(fault)
                return fault
        return None

    def _get_caller_identity(self, params: dict, call: Call) -> dict:
        check_schema(params, {})
        uin = account_uin(call.account)
        return {"Arn": f"qcs::cam::uin/{uin}:uin/{uin}", "AccountId": uin, "UserId": uin, "PrincipalId": uin,
                "Type": "RootAccount"}

    def _describe_instances(self, params: dict, call: Call) -> dict:
        check_schema(params, DESCRIBE_SCHEMA)
        ids = params.get("InstanceIds") or []
        filters = params.get("Filters") or []
        if ids and filters:
            raise ApiError("InvalidParameterCombination", "InstanceIds and Filters cannot be specified together.")
        check_ids(ids)
        if len(filters) > 10:
            raise ApiError("InvalidParameterValue.LimitExceeded", "At most 10 Filters per request.")
        predicates = [compile_filter(i, f) for i, f in enumerate(filters)]
        offset, limit = paging(params)
        # A paging sweep repeats one query per page; the cache is dropped on any change.
        query = (call.region, call.account, tuple(ids), json.dumps(filters, sort_keys=True))
        matches = self._query_cache.get(query)
        if matches is None:
            wanted = set(ids)
            matches = self._query_cache[query] = sorted(
                (inst for inst in self.instances.values()
                 if inst.region == call.region and inst.account == call.account
                 and (inst.visible_after <= call.now or inst.seen)
                 and (not wanted or inst.instance_id in wanted)
                 and all(predicate(inst) for predicate in predicates)),
                key=lambda inst: (inst.created_time, inst.instance_id))
        hidden = 0
        if any(is_tag_filter(f.get("Name") or "") for f in filters):
            indexed = [inst for inst in matches if self._in_tag_index(inst, call.now)]
            hidden, matches = len(matches) - len(indexed), indexed
        page = matches[offset:offset + limit]
        for inst in page:
            inst.seen = True
        call.entry.update({**({"instanceIds": ids} if ids else {}), **({"filters": filters} if filters else {}),
                           "offset": offset, "limit": limit, "totalCount": len(matches), "count": len(page),
                           **({"indexHidden": hidden} if hidden else {})})
        return {"TotalCount": len(matches), "InstanceSet": [describe_view(inst) for inst in page]}

    def _describe_instances_status(self, params: dict, call: Call) -> dict:
        check_schema(params, STATUS_SCHEMA)
        ids = params.get("InstanceIds") or []
        check_ids(ids)
        offset, limit = paging(params)
        wanted = set(ids)
        matches = sorted((inst for inst in self.instances.values()
                          if self._here(inst, call) and (inst.visible_after <= call.now or inst.seen)
                          and (not wanted or inst.instance_id in wanted)),
                         key=lambda inst: (inst.created_time, inst.instance_id))
        page = matches[offset:offset + limit]
        call.entry.update({**({"instanceIds": ids} if ids else {}), "offset": offset, "limit": limit,
                           "totalCount": len(matches), "count": len(page)})
        return {"TotalCount": len(matches),
                "InstanceStatusSet": [{"InstanceId": inst.instance_id, "InstanceState": inst.state}
                                      for inst in page]}

    def _describe_instance_type_configs(self, params: dict, call: Call) -> dict:
        check_schema(params, TYPE_CONFIGS_SCHEMA)
        filters = params.get("Filters") or []
        if len(filters) > 10:
            raise ApiError("InvalidParameterValue.LimitExceeded", "At most 10 Filters per request.")
        predicates = [compile_filter(i, f, TYPE_FILTER_FIELDS) for i, f in enumerate(filters)]
        zones = [f"{call.region}-{n}" for n in range(1, CATALOGUE_ZONES + 1)]
        named = {z for f in filters if f.get("Name") == "zone" for z in f.get("Values") or []}
        zones += sorted(z for z in named if z not in zones and z.rsplit("-", 1)[0] == call.region)
        entries = [(zone, t) for zone in zones for t in self.type_catalogue.values()]
        matches = [entry for entry in entries if all(predicate(entry) for predicate in predicates)]
        call.entry.update({**({"filters": filters} if filters else {}), "count": len(matches)})
        return {"InstanceTypeConfigSet": [t.view(zone) for zone, t in matches]}

    def _in_tag_index(self, inst: Instance, now: float) -> bool:
        """Whether the lagging, non-monotonic tag index lists the instance right now: not
        before index_after; an indexed instance drops out with the configured probability
        (drawn per instance, per listing) for tagIndexDropSeconds, then comes back."""
        if inst.index_after > now or inst.index_dropped_until > now:
            return False
        if self.tag_index_drop_probability > 0 and self._index_random.random() < self.tag_index_drop_probability:
            inst.index_dropped_until = now + self.tag_index_drop_seconds
            return False
        return True

    def _here(self, inst: Instance, call: Call) -> bool:
        """Whether the caller's region and account hold inst."""
        return inst.region == call.region and inst.account == call.account

    def _run_instances(self, params: dict, call: Call) -> dict:
        check_schema(params, RUN_SCHEMA)
        launch = parse_launch(params, call.region)
        dry_run = params.get("DryRun") is True
        token = params.get("ClientToken") or None
        call.entry.update({"count": launch["count"], "zone": launch["zone"],
                           "instanceType": launch["instance_type"],
                           **({"clientToken": token} if token else {}),
                           **({"dryRun": True} if dry_run else {})})
        if token and not dry_run and (call.account, token) in self.client_tokens:
            return self._replay(token, params, call)
        self._check_capacity(launch["zone"], launch["instance_type"], launch["charge_type"], launch["count"])
        if dry_run:
            return {}
        invisible = self._take_fault("RunInstances", ("invisibleSeconds",))
        launch_fail = self._take_fault("RunInstances", ("launchFail",))
        index_lag = self._take_fault("RunInstances", ("tagIndexLagSeconds",))
        index_lag_one = self._take_fault("RunInstances", ("tagIndexLagOneSeconds",))
        call.entry.setdefault("faults", []).extend(
            f.kind for f in (invisible, launch_fail, index_lag, index_lag_one) if f)
        ids = []
        for n in range(launch["count"]):
            name = launch["name"] + (str(n + 1) if launch["count"] > 1 else "")
            inst = self._spawn(
                call.now, call.region, launch["zone"], launch["instance_type"], launch["charge_type"],
                [dict(tag) for tag in launch["tags"]], "PENDING", launch["public_ip"],
                image_id=launch["image_id"], name=name, project_id=launch["project_id"],
                vpc_id=launch["vpc_id"], subnet_id=launch["subnet_id"],
                security_group_ids=list(launch["security_group_ids"]), bandwidth_out=launch["bandwidth_out"],
                internet_charge_type=launch["internet_charge_type"], system_disk=dict(launch["system_disk"]),
                key_ids=launch["key_ids"], client_token=token, launched_by=call.user_agent,
                secret_id=call.secret_id, visible_after=(call.now + invisible.value) if invisible else 0.0,
                launch_fail=launch_fail is not None,
                index_lag=index_lag_one.value if index_lag_one and n == 0 else index_lag.value if index_lag else None,
                latest_operation="RunInstances",
                latest_operation_state="OPERATING", latest_request_id=call.request_id, account=call.account)
            for key in inst.stat_keys():
                self.launched[key] += 1
            ids.append(inst.instance_id)
        if token:
            self.client_tokens[(call.account, token)] = {"instanceIds": ids,
                                                         "fingerprint": launch_fingerprint(params)}
        call.entry["instanceIds"] = ids
        return {"InstanceIdSet": ids}

    def _replay(self, token: str, params: dict, call: Call) -> dict:
        first = self.client_tokens[(call.account, token)]
        call.entry.update({"instanceIds": first["instanceIds"], "replay": True})
        if first["fingerprint"] != launch_fingerprint(params):
            call.entry["paramsDiffer"] = True
            print(f"cvm-emulator: warning: ClientToken {token} reused with different parameters",
                  file=sys.stderr, flush=True)
        return {"InstanceIdSet": list(first["instanceIds"])}

    def _check_capacity(self, zone: str, instance_type: str, charge_type: str, count: int) -> None:
        for (rule_zone, rule_type), rule in self.stock.items():
            if rule_zone in (zone, "*") and rule_type in (instance_type, "*"):
                used = sum(1 for inst in self.instances.values() if inst.live
                           and rule_zone in (inst.zone, "*") and rule_type in (inst.instance_type, "*"))
                if used + count > rule["count"]:
                    raise ApiError(rule["errorCode"], rule.get("message") or
                                   f"Insufficient stock of {instance_type} in {zone}.")
        if charge_type == "SPOTPAID" and self.spot_quota is not None:
            used = sum(1 for inst in self.instances.values() if inst.live and inst.charge_type == "SPOTPAID")
            if used + count > self.spot_quota["spot"]:
                raise ApiError(self.spot_quota["errorCode"],
                               f"Spot instance quota exceeded: {used} in use, {count} requested, "
                               f"quota {self.spot_quota['spot']}.")

    def _terminate_instances(self, params: dict, call: Call) -> dict:
        check_schema(params, TERMINATE_SCHEMA)
        ids = list(dict.fromkeys(params.get("InstanceIds") or []))
        if not ids:
            raise ApiError("MissingParameter", "The parameter `InstanceIds` is missing.")
        if len(ids) > 100:
            raise ApiError("InvalidParameterValue.LimitExceeded", "At most 100 InstanceIds per request.")
        malformed = [i for i in ids if not INSTANCE_ID_RE.fullmatch(i)]
        if malformed:
            raise ApiError("InvalidInstanceId.Malformed", f"Malformed instance id `{malformed[0]}`.")
        call.entry["instanceIds"] = ids
        found = {i: self.instances.get(i) for i in ids}
        # An instance still inside its visibility lag is unknown to TerminateInstances too,
        # as it may be to the real API: the caller cannot count that answer as "gone".
        missing = [i for i, inst in found.items()
                   if inst is None or not self._here(inst, call) or inst.visible_after > call.now]
        if missing:
            raise ApiError("InvalidInstanceId.NotFound", f"The instance(s) `{', '.join(missing)}` not found.")
        terminating = [i for i, inst in found.items() if inst.state == "TERMINATING"]
        if terminating:
            raise ApiError("UnsupportedOperation.InstanceStateTerminating",
                           f"The instance(s) `{', '.join(terminating)}` are already terminating.")
        if len({inst.charge_type for inst in found.values()}) > 1:
            raise ApiError("UnsupportedOperation.InstanceMixedPricingModel",
                           "All instances of one request must have the same charge type.")
        for inst in found.values():
            self._set_state(inst, "TERMINATING")
            inst.gone_at = call.now + self.terminating_seconds
            inst.latest_operation, inst.latest_operation_state = "TerminateInstances", "OPERATING"
            inst.latest_request_id = call.request_id
            heapq.heappush(self._timers, (inst.gone_at, inst.instance_id, "gone"))
            for key in inst.stat_keys():
                self.terminated[key] += 1
        return {}

    # -- control API --------------------------------------------------------------------

    def control(self, method: str, path: str, query: dict[str, list[str]], body: bytes) -> Reply:
        route = CONTROL_ROUTES.get((method, path))
        if route is None:
            return Reply.json(404, {"ok": False, "error": f"no such endpoint: {method} {path}"})
        try:
            payload = json.loads(body.decode("utf-8")) if body.strip() else {}
            if not isinstance(payload, dict):
                raise ControlError("the body must be a JSON object")
            with self.lock:
                now = time.time()
                self._advance(now)
                result = route(self, payload, query, now)
        except (UnicodeDecodeError, ValueError):
            return Reply.json(400, {"ok": False, "error": "the body is not valid JSON"})
        except ControlError as err:
            return Reply.json(400, {"ok": False, "error": str(err)}, str(err))
        return Reply.json(200, result)

    def ctl_health(self, payload, query, now):
        return {"ok": True}

    def ctl_reset(self, payload, query, now):
        self._reset()
        if self._journal_file:
            self._journal_file.write(json.dumps({"action": "_reset", "time": round(now, 3)}) + "\n")
            self._journal_file.flush()
        return {"ok": True}

    def ctl_credentials(self, payload, query, now):
        secret_id = control_string(payload, "secretId")
        if payload.get("remove") is True:
            removed = self.credentials.pop(secret_id, None) is not None
            if removed:
                self.revoked.add(secret_id)
            self._record({"action": "_credentials", "secretId": secret_id, "removed": removed}, now)
            return {"ok": True, "removed": removed}
        token = payload.get("token") or ""
        if not isinstance(token, str):
            raise ControlError("token must be a string")
        self.credentials[secret_id] = Credential(control_string(payload, "secretKey"), token,
                                                 control_string(payload, "account", "main"))
        self.revoked.discard(secret_id)
        self._record({"action": "_credentials", "secretId": secret_id, "hasToken": bool(token)}, now)
        return {"ok": True}

    def ctl_config(self, payload, query, now):
        if "pendingSeconds" in payload:
            self.pending_seconds = control_number(payload, "pendingSeconds")
        if "terminatingSeconds" in payload:
            self.terminating_seconds = control_number(payload, "terminatingSeconds")
        if "tagIndexLagSeconds" in payload:
            self.tag_index_lag = control_number(payload, "tagIndexLagSeconds")
        if "tagIndexDropProbability" in payload:
            probability = control_number(payload, "tagIndexDropProbability")
            if probability > 1:
                raise ControlError("tagIndexDropProbability must be in [0, 1]")
            self.tag_index_drop_probability = probability
        if "tagIndexDropSeconds" in payload:
            self.tag_index_drop_seconds = control_number(payload, "tagIndexDropSeconds")
        if "addressBase" in payload:
            self._address_counter = control_number(payload, "addressBase", integer=True)
        if "seed" in payload:
            seed = control_number(payload, "seed", integer=True)
            self._random.seed(seed)
            self._index_random.seed(seed)
        config = {"pendingSeconds": self.pending_seconds, "terminatingSeconds": self.terminating_seconds,
                  "tagIndexLagSeconds": self.tag_index_lag,
                  "tagIndexDropProbability": self.tag_index_drop_probability,
                  "tagIndexDropSeconds": self.tag_index_drop_seconds}
        self._record({"action": "_config", **config}, now)
        return {"ok": True, **config}

    def ctl_list_instances(self, payload, query, now):
        region = (query.get("region") or [None])[0]
        chosen = sorted((inst for inst in self.instances.values() if region in (None, inst.region)),
                        key=lambda inst: (inst.created_time, inst.instance_id))
        return [{**describe_view(inst), "region": inst.region, "account": inst.account,
                 "clientToken": inst.client_token,
                 "launchedBy": inst.launched_by, "secretId": inst.secret_id,
                 "visible": inst.visible_after <= now, "visibleAfter": inst.visible_after or None,
                 "indexedAfter": inst.index_after or None,
                 "indexDroppedUntil": inst.index_dropped_until if inst.index_dropped_until > now else None,
                 "seen": inst.seen, "launchFail": inst.launch_fail} for inst in chosen]

    def ctl_create_instances(self, payload, query, now):
        region = control_string(payload, "region")
        if not REGION_RE.fullmatch(region):
            raise ControlError(f"region {region!r} is not shaped like ap-singapore")
        zone = control_string(payload, "zone", f"{region}-1")
        instance_type = control_string(payload, "instanceType", "S5.MEDIUM4")
        state = control_string(payload, "state", "RUNNING")
        if state not in ALL_STATES:
            raise ControlError(f"state must be one of {sorted(ALL_STATES)}")
        charge_type = control_string(payload, "chargeType", "SPOTPAID")
        tags = control_tags(payload.get("tags", []))
        count = control_number(payload, "count", 1, integer=True, default=1)
        public_ip = payload.get("publicIp", True)
        if not isinstance(public_ip, bool):
            raise ControlError("publicIp must be a boolean")
        account = control_string(payload, "account", "main")
        ids = [self._spawn(now, region, zone, instance_type, charge_type, [dict(t) for t in tags], state,
                           public_ip, bandwidth_out=10 if public_ip else 0, account=account).instance_id
               for _ in range(count)]
        self._record({"action": "_instances", "region": region, "zone": zone, "state": state,
                      "tags": tags, "instanceIds": ids}, now)
        return {"ok": True, "instanceIds": ids}

    def ctl_reclaim(self, payload, query, now):
        if "instanceIds" in payload:
            ids = payload["instanceIds"]
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise ControlError("instanceIds must be a list of strings")
            unknown = [i for i in ids if i not in self.instances]
            if unknown:
                raise ControlError(f"unknown instance(s): {', '.join(unknown)}")
            victims = [self.instances[i] for i in dict.fromkeys(ids)]
        elif "tag" in payload:
            tag = control_tags([payload["tag"]])[0]
            count = control_number(payload, "count", 1, integer=True, default=1)
            region = payload.get("region")
            candidates = sorted((inst for inst in self.instances.values()
                                 if inst.live and inst.tag_value(tag["Key"]) == tag["Value"]
                                 and region in (None, inst.region)),
                                key=lambda inst: (inst.created, inst.instance_id), reverse=True)
            victims = candidates[:count]
        else:
            raise ControlError("give instanceIds or tag")
        shutdown = payload.get("shutdown") is True
        ids = [inst.instance_id for inst in victims]
        if "noticeSeconds" in payload:
            notice = control_number(payload, "noticeSeconds")
            for inst in victims:
                inst.reclaim_at, inst.reclaim_shutdown = now + notice, shutdown
                heapq.heappush(self._timers, (inst.reclaim_at, inst.instance_id, "reclaim"))
            self._record({"action": "_reclaim", "instanceIds": ids, "shutdown": shutdown,
                          "noticeSeconds": notice}, now)
            return {"ok": True, "announced": ids, "reclaimAt": round(now + notice, 3),
                    "terminationTime": termination_time(now + notice)}
        for inst in victims:
            self._reclaim(inst, shutdown)
        self._record({"action": "_reclaim", "instanceIds": ids, "shutdown": shutdown}, now)
        return {"ok": True, "reclaimed": ids}

    def ctl_terminate(self, payload, query, now):
        """Terminates instances of one account as its owner would in the console (no
        signed call, no ClientToken): the fault campaign abandoning an AccountChanged
        pool's instances in the other account (docs/troubleshooting.md#accountchanged)."""
        ids = payload.get("instanceIds")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise ControlError("instanceIds must be a non-empty list of strings")
        account = control_string(payload, "account")
        victims = [self.instances.get(i) for i in dict.fromkeys(ids)]
        wrong = [i for i, inst in zip(dict.fromkeys(ids), victims)
                 if inst is None or inst.account != account or inst.state == "TERMINATING"]
        if wrong:
            raise ControlError(f"not an instance (not terminating) of account {account}: {', '.join(wrong)}")
        for inst in victims:
            self._set_state(inst, "TERMINATING")
            inst.gone_at = now + self.terminating_seconds
            heapq.heappush(self._timers, (inst.gone_at, inst.instance_id, "gone"))
            for key in inst.stat_keys():
                self.terminated[key] += 1
        self._record({"action": "_terminate", "instanceIds": list(dict.fromkeys(ids)), "account": account}, now)
        return {"ok": True, "terminating": list(dict.fromkeys(ids))}

    def _reclaim(self, inst: Instance, shutdown: bool) -> None:
        for key in inst.stat_keys():
            self.reclaimed[key] += 1
        if shutdown:
            self._set_state(inst, "SHUTDOWN")
        else:
            self._remove(inst)

    def ctl_notice(self, payload, query, now):
        ids = payload.get("instanceIds")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ControlError("instanceIds must be a list of strings")
        if payload.get("cancel") is not True:
            raise ControlError("give \"cancel\": true (announce a reclaim with /_emulator/reclaim)")
        unknown = [i for i in ids if i not in self.instances]
        if unknown:
            raise ControlError(f"unknown instance(s): {', '.join(unknown)}")
        cancelled = [i for i in dict.fromkeys(ids) if self.instances[i].reclaim_at]
        for instance_id in cancelled:
            self.instances[instance_id].reclaim_at = 0.0
        self._record({"action": "_notice", "instanceIds": ids, "cancelled": cancelled}, now)
        return {"ok": True, "cancelled": cancelled}

    # -- instance metadata (in-guest) ---------------------------------------------------

    def metadata(self, instance_id: str, item: str) -> Reply:
        """GET /metadata/<id>/latest/meta-data/<item>, as the instance itself would ask."""
        now = time.time()
        with self.lock:
            self._advance(now)
            inst = self.instances.get(instance_id)
            value = None
            if inst is not None and item == "instance-id":
                value = inst.instance_id
            elif inst is not None and item == "spot/termination-time" and inst.reclaim_at:
                value = termination_time(inst.reclaim_at)
        if inst is None:  # gone, and its metadata service with it
            return Reply(0, b"", drop=True, summary=f"metadata {item}: no such instance")
        if value is None:
            return Reply(404, b"<html><body><h1>404 Not Found</h1></body></html>\n", "text/html",
                         summary=f"metadata {item}")
        return Reply(200, value.encode(), "text/plain", summary=f"metadata {item}")

    def ctl_stock(self, payload, query, now):
        key = (control_string(payload, "zone"), control_string(payload, "instanceType"))
        if payload.get("count") is None:
            self.stock.pop(key, None)
        else:
            self.stock[key] = {"count": control_number(payload, "count", integer=True),
                               "errorCode": control_string(payload, "errorCode", DEFAULT_STOCK_CODE),
                               "message": payload.get("message")}
        self._record({"action": "_stock", "zone": key[0], "instanceType": key[1], **self.stock.get(key, {})}, now)
        return {"ok": True}

    def ctl_quota(self, payload, query, now):
        if payload.get("spot") is None:
            self.spot_quota = None
        else:
            self.spot_quota = {"spot": control_number(payload, "spot", integer=True),
                               "errorCode": control_string(payload, "errorCode", DEFAULT_QUOTA_CODE)}
        self._record({"action": "_quota", **(self.spot_quota or {"spot": None})}, now)
        return {"ok": True}

    def ctl_instance_types(self, payload, query, now):
        instance_type = control_string(payload, "instanceType")
        if not INSTANCE_TYPE_RE.fullmatch(instance_type):
            raise ControlError("instanceType must be FAMILY.SIZE")
        gpu = control_number(payload, "gpu", integer=True, default=0)
        entry = InstanceTypeConfig(instance_type, control_number(payload, "cpu", 1, integer=True),
                                   control_number(payload, "memory", 1, integer=True), gpu,
                                   control_number(payload, "gpuCount", default=float(gpu)),
                                   payload.get("gpuType") if isinstance(payload.get("gpuType"), str) else "")
        self.type_catalogue[instance_type] = entry
        self._record({"action": "_instanceTypes", "instanceType": instance_type}, now)
        return {"ok": True}

    def ctl_fault(self, payload, query, now):
        if payload.get("clear") is True:
            cleared = len(self.faults)
            self.faults.clear()
            self._record({"action": "_fault", "clear": True, "cleared": cleared}, now)
            return {"ok": True, "cleared": cleared}
        action = payload.get("action")
        if action not in ALL_ACTIONS + ("*",):
            raise ControlError(f"action must be one of {list(ALL_ACTIONS)} or \"*\"")
        kinds = [kind for kind in OUTCOME_FAULTS + MODIFIER_FAULTS if kind in payload]
        if len(kinds) != 1:
            raise ControlError(f"give exactly one of {list(OUTCOME_FAULTS + MODIFIER_FAULTS)} (or \"clear\")")
        kind = kinds[0]
        if kind in RUN_ONLY_FAULTS and action not in ("RunInstances", "*"):
            raise ControlError(f"{kind} applies to RunInstances only")
        if kind == "errorCode":
            value = control_string(payload, kind)
        elif kind == "httpStatus":
            value = control_number(payload, kind, 100, integer=True)
            if value > 599:
                raise ControlError("httpStatus must be 100..599")
        elif kind in ("latencyMs", "invisibleSeconds", "tagIndexLagSeconds", "tagIndexLagOneSeconds"):
            value = control_number(payload, kind)
        elif payload[kind] is not True:
            raise ControlError(f"{kind} must be true")
        else:
            value = True
        times = control_number(payload, "times", -1, integer=True, default=1)
        if times == 0:
            raise ControlError("times must be -1 (until cleared) or >= 1")
        message = payload.get("message")
        if message is not None and not isinstance(message, str):
            raise ControlError("message must be a string")
        fault = Fault(self._next_fault_id, action, kind, value, times, message, payload.get("drop") is True)
        self._next_fault_id += 1
        self.faults.append(fault)
        self._record({**fault.to_json(), "action": "_fault", "faultAction": fault.action}, now)
        return {"ok": True, "faultId": fault.fault_id}

    def ctl_list_faults(self, payload, query, now):
        return [fault.to_json() for fault in self.faults]

    def ctl_killhook(self, payload, query, now):
        if payload.get("clear") is True:
            cleared = len(self.kill_hooks)
            self.kill_hooks.clear()
            self._record({"action": "_killhook", "clear": True, "cleared": cleared}, now)
            return {"ok": True, "cleared": cleared}
        action = payload.get("action")
        if action not in ALL_ACTIONS + ("*",):
            raise ControlError(f"action must be one of {list(ALL_ACTIONS)} or \"*\"")
        when = payload.get("when")
        if when not in ("before", "after"):
            raise ControlError("when must be \"before\" or \"after\"")
        pid = control_number(payload, "pid", 2, integer=True)
        signum = control_number(payload, "signal", 1, integer=True, default=int(signal.SIGKILL))
        if signum > 64:
            raise ControlError("signal must be 1..64")
        times = control_number(payload, "times", -1, integer=True, default=1)
        if times == 0:
            raise ControlError("times must be -1 (until cleared) or >= 1")
        comm = payload.get("comm")
        if comm is not None and (not isinstance(comm, str) or not comm):
            raise ControlError("comm must be a non-empty string")
        hook = KillHook(self._next_hook_id, action, when, pid, signum, times, comm)
        self._next_hook_id += 1
        self.kill_hooks.append(hook)
        self._record({**hook.to_json(), "action": "_killhook", "hookAction": hook.action}, now)
        return {"ok": True, "hookId": hook.hook_id}

    def ctl_list_killhooks(self, payload, query, now):
        return [hook.to_json() for hook in self.kill_hooks]

    def ctl_throttle(self, payload, query, now):
        action = payload.get("action")
        if action not in ALL_ACTIONS + ("*",):
            raise ControlError(f"action must be one of {list(ALL_ACTIONS)} or \"*\"")
        actions = ACTIONS if action == "*" else (action,)
        for name in actions:
            per_second = payload.get("perSecond")
            self.rates[name] = DEFAULT_RATES[name] if per_second is None else control_number(payload, "perSecond")
        self.buckets = {key: bucket for key, bucket in self.buckets.items() if key[1] not in actions}
        self._record({"action": "_throttle", "rates": dict(self.rates)}, now)
        return {"ok": True, "rates": dict(self.rates)}

    def ctl_journal(self, payload, query, now):
        since = (query.get("since") or ["0"])[0]
        if not is_decimal(since):
            raise ControlError("since must be a sequence number")
        return [entry for entry in self.journal if entry["seq"] > int(since)]

    def ctl_stats(self, payload, query, now):
        tag_key = (query.get("tagKey") or [None])[0]
        tag_value = (query.get("tagValue") or [None])[0]
        if tag_value is not None and tag_key is None:
            raise ControlError("tagValue needs tagKey")
        key = (tag_key, tag_value)
        result = {"ok": True, "live": self.live[key], "maxLive": self.max_live[key],
                  "launched": self.launched[key], "terminated": self.terminated[key],
                  "reclaimed": self.reclaimed[key]}
        if (query.get("history") or ["0"])[0] not in ("0", ""):
            result["history"] = [list(point) for point in self.live_history.get(key, ())]
        return result


HANDLERS = {"DescribeInstances": Emulator._describe_instances,
            "DescribeInstancesStatus": Emulator._describe_instances_status, "RunInstances": Emulator._run_instances,
            "TerminateInstances": Emulator._terminate_instances,
            "DescribeInstanceTypeConfigs": Emulator._describe_instance_type_configs,
            "GetCallerIdentity": Emulator._get_caller_identity}
CONTROL_ROUTES = {
    ("GET", "/_emulator/health"): Emulator.ctl_health,
    ("POST", "/_emulator/reset"): Emulator.ctl_reset,
    ("POST", "/_emulator/credentials"): Emulator.ctl_credentials,
    ("POST", "/_emulator/config"): Emulator.ctl_config,
    ("GET", "/_emulator/instances"): Emulator.ctl_list_instances,
    ("POST", "/_emulator/instances"): Emulator.ctl_create_instances,
    ("POST", "/_emulator/reclaim"): Emulator.ctl_reclaim,
    ("POST", "/_emulator/terminate"): Emulator.ctl_terminate,
    ("POST", "/_emulator/notice"): Emulator.ctl_notice,
    ("POST", "/_emulator/stock"): Emulator.ctl_stock,
    ("POST", "/_emulator/quota"): Emulator.ctl_quota,
    ("POST", "/_emulator/fault"): Emulator.ctl_fault,
    ("GET", "/_emulator/faults"): Emulator.ctl_list_faults,
    ("POST", "/_emulator/killhook"): Emulator.ctl_killhook,
    ("GET", "/_emulator/killhooks"): Emulator.ctl_list_killhooks,
    ("POST", "/_emulator/throttle"): Emulator.ctl_throttle,
    ("POST", "/_emulator/instance-types"): Emulator.ctl_instance_types,
    ("GET", "/_emulator/journal"): Emulator.ctl_journal,
    ("GET", "/_emulator/stats"): Emulator.ctl_stats,
}

FILTER_FIELDS = {
    "zone": lambda inst: [inst.zone],
    "instance-id": lambda inst: [inst.instance_id],
    "instance-type": lambda inst: [inst.instance_type],
    "instance-charge-type": lambda inst: [inst.charge_type],
    "instance-state": lambda inst: [inst.state],
    "instance-name": lambda inst: [inst.name],
    "tag-key": lambda inst: [t["Key"] for t in inst.tags],
    "tag-value": lambda inst: [t["Value"] for t in inst.tags],
}


def check_ids(ids: list) -> None:
    """InstanceIds of a describe: at most 100, each shaped ins-xxxxxxxx."""
    if len(ids) > 100:
        raise ApiError("InvalidParameterValue.LimitExceeded", "At most 100 InstanceIds per request.")
    malformed = [i for i in ids if not INSTANCE_ID_RE.fullmatch(i)]
    if malformed:
        raise ApiError("InvalidInstanceId.Malformed", f"Malformed instance id `{malformed[0]}`.")


def paging(params: dict) -> tuple[int, int]:
    """Offset (default 0, not negative) and Limit (default 20, 1..100) of a describe."""
    offset = params.get("Offset")
    offset = 0 if offset is None else offset
    limit = params.get("Limit")
    limit = 20 if limit is None else limit
    if offset < 0:
        raise ApiError("InvalidParameterValue.Range", "Offset must not be negative.")
    if limit > 100:
        raise ApiError("InvalidParameterValue.LimitExceeded", "Limit must not exceed 100.")
    if limit < 1:
        raise ApiError("InvalidParameterValue.Range", "Limit must be between 1 and 100.")
    return offset, limit


METADATA_PATH_RE = re.compile(r"/metadata/(?P<id>[^/]+)/latest/meta-data/(?P<item>instance-id|spot/termination-time)")
UTC_PLUS_8 = 8 * 3600


def termination_time(epoch: float) -> str:
    """The metadata service's spot/termination-time: the reclaim time, UTC+8, whole
    seconds (cut, so never later than the reclaim)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(int(epoch) + UTC_PLUS_8))


def compile_filter(index: int, spec: dict, fields: dict | None = None):
    """A predicate for one Filter: true when any of the instance's values is listed
    (fields: the filter names and what they read, FILTER_FIELDS and tag:<key> by default)."""
    name, values = spec.get("Name"), spec.get("Values")
    if not name:
        raise ApiError("MissingParameter", f"The parameter `Filters.{index}.Name` is missing.")
    if not values:
        raise ApiError("MissingParameter", f"The parameter `Filters.{index}.Values` is missing or empty.")
    if len(values) > 5:
        raise ApiError("InvalidFilterValue.LimitExceeded", f"`Filters.{index}.Values` has more than 5 values.")
    if fields is None and name.startswith("tag:") and len(name) > 4:
        tag_key = name[4:]
        field_values = lambda inst: [t["Value"] for t in inst.tags if t["Key"] == tag_key]  # noqa: E731
    elif name in (fields or FILTER_FIELDS):
        field_values = (fields or FILTER_FIELDS)[name]
    else:
        raise ApiError("InvalidFilter", f"The filter `{name}` is not supported.")
    wanted = set(values)
    return lambda inst: any(value in wanted for value in field_values(inst))


def parse_launch(params: dict, region: str) -> dict:
    """Check a RunInstances request (types already checked) and return what a launch needs."""
    placement = params.get("Placement") or {}
    zone = placement.get("Zone")
    if not zone:
        raise ApiError("MissingParameter", "The parameter `Placement.Zone` is missing.")
    image_id = params.get("ImageId")
    if not image_id:
        raise ApiError("MissingParameter", "The parameter `ImageId` is missing.")
    if not IMAGE_ID_RE.fullmatch(image_id):
        raise ApiError("InvalidImageId.Malformed", f"Malformed image id `{image_id}`.")
    instance_type = params.get("InstanceType")
    if not instance_type:
        raise ApiError("MissingParameter", "The parameter `InstanceType` is missing.")
    if not INSTANCE_TYPE_RE.fullmatch(instance_type):
        raise ApiError("InvalidInstanceType.Malformed", f"Malformed instance type `{instance_type}`.")
    if not re.fullmatch(re.escape(region) + r"-\d+", zone):
        raise ApiError("InvalidZone.MismatchRegion", f"The zone `{zone}` is not in region `{region}`.")
    charge_type = params.get("InstanceChargeType") or "POSTPAID_BY_HOUR"
    if charge_type not in CHARGE_TYPES:
        raise ApiError("InvalidParameterValue", f"`InstanceChargeType` must be one of {', '.join(CHARGE_TYPES)}.")
    check_market_options(params.get("InstanceMarketOptions"), charge_type)
    count = params.get("InstanceCount")
    count = 1 if count is None else count
    if count > 100:
        raise ApiError("InvalidParameterValue.LimitExceeded", "`InstanceCount` must not exceed 100.")
    if count < 1:
        raise ApiError("InvalidParameterValue.Range", "`InstanceCount` must be between 1 and 100.")
    token = params.get("ClientToken") or ""
    if not token.isascii():
        raise ApiError("InvalidParameterValue", "`ClientToken` must be ASCII.")
    if len(token) > 64:
        raise ApiError("InvalidClientToken.TooLong", "`ClientToken` must not exceed 64 characters.")
    name = params.get("InstanceName") or DEFAULT_INSTANCE_NAME
    if len(name) > 60:
        raise ApiError("InvalidInstanceName.TooLong", "`InstanceName` must not exceed 60 characters.")
    check_user_data(params.get("UserData"))
    bad_groups = [g for g in params.get("SecurityGroupIds") or [] if not g.startswith("sg-")]
    if bad_groups:
        raise ApiError("InvalidSgId.Malformed", f"Malformed security group id `{bad_groups[0]}`.")
    internet = params.get("InternetAccessible") or {}
    bandwidth = internet.get("InternetMaxBandwidthOut") or 0
    if bandwidth < 0:
        raise ApiError("InvalidParameterValue.Range", "`InternetAccessible.InternetMaxBandwidthOut` must be >= 0.")
    vpc = params.get("VirtualPrivateCloud") or {}
    system_disk = params.get("SystemDisk") or {}
    login = params.get("LoginSettings") or {}
    return {"zone": zone, "image_id": image_id, "instance_type": instance_type, "charge_type": charge_type,
            "count": count, "name": name, "tags": parse_tags(params.get("TagSpecification")),
            "project_id": placement.get("ProjectId") or 0,
            "public_ip": bandwidth > 0 and internet.get("PublicIpAssigned") is not False,
            "bandwidth_out": bandwidth,
            "internet_charge_type": internet.get("InternetChargeType") or "TRAFFIC_POSTPAID_BY_HOUR",
            "vpc_id": vpc.get("VpcId") or "vpc-default0", "subnet_id": vpc.get("SubnetId") or "subnet-default0",
            "security_group_ids": params.get("SecurityGroupIds") or [],
            "system_disk": {"DiskType": system_disk.get("DiskType", "CLOUD_PREMIUM"),
                            "DiskSize": system_disk.get("DiskSize", 50)},
            "key_ids": login.get("KeyIds") if isinstance(login.get("KeyIds"), list) else None}


def check_market_options(options: dict | None, charge_type: str) -> None:
    if charge_type != "SPOTPAID":
        if options:
            raise ApiError("InvalidParameterCombination",
                           "`InstanceMarketOptions` is only valid with InstanceChargeType SPOTPAID.")
        return
    if not options or options.get("MarketType") != "spot":
        raise ApiError("InvalidParameterValue",
                       "`InstanceMarketOptions.MarketType` must be \"spot\" for InstanceChargeType SPOTPAID.")
    spot = options.get("SpotOptions") or {}
    if spot.get("SpotInstanceType") not in (None, "one-time"):
        raise ApiError("InvalidParameterValue",
                       "`InstanceMarketOptions.SpotOptions.SpotInstanceType` must be \"one-time\".")
    max_price = spot.get("MaxPrice")
    if max_price is not None and (not re.fullmatch(r"\d+(\.\d+)?", max_price) or float(max_price) <= 0):
        raise ApiError("InvalidParameterValue",
                       "`InstanceMarketOptions.SpotOptions.MaxPrice` must be a positive decimal string.")


def check_user_data(user_data: str | None) -> None:
    if user_data is None:
        return
    if len(user_data) > 16 * 1024:
        raise ApiError("InvalidParameterValue.TooLarge", "`UserData` must not exceed 16 KB.")
    try:
        base64.b64decode(user_data, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError("InvalidParameterValue.InvalidUserDataFormat", "`UserData` must be base64.") from None


def launch_fingerprint(params: dict) -> str:
    """What must match for a ClientToken reuse to count as "the same request"."""
    return json.dumps({k: v for k, v in params.items() if k not in ("ClientToken", "DryRun")}, sort_keys=True)


def describe_view(inst: Instance) -> dict:
    """An instance as DescribeInstances shows it (fields of the SDK's Instance model)."""
    known = TYPE_CATALOGUE.get(inst.instance_type)
    cpu, memory = (known.cpu, known.memory) if known else cpu_and_memory(inst.instance_type)
    return {
        "Placement": {"Zone": inst.zone, "ProjectId": inst.project_id},
        "InstanceId": inst.instance_id,
        "InstanceType": inst.instance_type,
        "CPU": cpu,
        "Memory": memory,
        "RestrictState": "NORMAL",
        "InstanceName": inst.name,
        "InstanceChargeType": inst.charge_type,
        "SystemDisk": {**inst.system_disk, "DiskId": "disk-" + inst.instance_id[4:]},
        "DataDisks": None,
        "PrivateIpAddresses": [inst.private_ip],
        "PublicIpAddresses": [inst.public_ip] if inst.public_ip else None,
        "InternetAccessible": {"InternetChargeType": inst.internet_charge_type,
                               "InternetMaxBandwidthOut": inst.bandwidth_out},
        "VirtualPrivateCloud": {"VpcId": inst.vpc_id, "SubnetId": inst.subnet_id, "AsVpcGateway": False},
        "ImageId": inst.image_id,
        "RenewFlag": None,
        "CreatedTime": inst.created_time,
        "ExpiredTime": None,
        "OsName": "TencentOS Server 3.1 (TK4)",
        "SecurityGroupIds": list(inst.security_group_ids),
        "LoginSettings": {"KeyIds": inst.key_ids},
        "InstanceState": inst.state,
        "Tags": [dict(tag) for tag in inst.tags],
        "StopChargingMode": "NOT_APPLICABLE",
        "Uuid": str(uuid.UUID(hashlib.md5(inst.instance_id.encode()).hexdigest())),
        "LatestOperation": inst.latest_operation,
        "LatestOperationState": inst.latest_operation_state,
        "LatestOperationRequestId": inst.latest_request_id,
        "IsolatedSource": "NOTISOLATED",
        "DisableApiTermination": False,
        "DefaultLoginUser": "root",
        "DefaultLoginPort": 22,
    }


# ---------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive (libcurl reuses connections): every reply has a
    Content-Length, and every request body is read in full before answering."""

    protocol_version = "HTTP/1.1"
    server_version = "cvm-emulator/1"
    # Headers and body go out in two writes; with Nagle on, the client's delayed ACK
    # would hold every reply back ~40 ms and hide throttling from fast clients.
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def _dispatch(self, method: str) -> None:
        started = time.monotonic()
        emulator: Emulator = self.server.emulator
        body = self._read_body()
        if body is None:
            return
        url = urlsplit(self.path)
        try:
            if url.path.startswith("/_emulator/"):
                reply = emulator.control(method, url.path, parse_qs(url.query), body)
            elif (match := METADATA_PATH_RE.fullmatch(url.path)) and method == "GET":
                reply = emulator.metadata(match["id"], match["item"])
            elif url.path == "/" and method == "POST":
                headers: dict[str, str] = {}
                for name, value in self.headers.items():
                    headers.setdefault(name.lower(), value)
                reply = emulator.api(headers, body)
            else:
                reply = Reply.json(404, {"ok": False, "error": f"no such endpoint: {method} {url.path}"})
        except Exception:  # a bug here must not take down the connection silently
            traceback.print_exc()
            reply = Reply.api_error(ApiError("InternalError", "Emulator internal error."),
                                    str(uuid.uuid4()), "InternalError")
        if reply.delay:
            time.sleep(reply.delay)
        if reply.drop:
            self.close_connection = True
        else:
            self._send(reply.status, reply.body, reply.content_type)
        self._access_log(method, url.path, reply, started)

    def _read_body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self._send(411, b"Content-Length required\n", "text/plain", close=True)
            return None
        length_text = self.headers.get("Content-Length", "0")
        if not is_decimal(length_text):
            self._send(400, b"bad Content-Length\n", "text/plain", close=True)
            return None
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            self._send(413, b"request body too large\n", "text/plain", close=True)
            return None
        return self.rfile.read(length)

    def _send(self, status: int, body: bytes, content_type: str, close: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type + ("; charset=utf-8" if "json" in content_type else ""))
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _access_log(self, method: str, path: str, reply: Reply, started: float) -> None:
        if not self.server.quiet:
            status = "drop" if reply.drop else reply.status
            elapsed = (time.monotonic() - started) * 1000
            summary = f" {reply.summary}" if reply.summary else ""
            print(f"cvm-emulator: {method} {path} {status}{summary} {elapsed:.0f}ms",
                  file=sys.stderr, flush=True)

    def log_request(self, code="-", size="-") -> None:
        """Replaced by _access_log, which knows the action and the error code."""

    def log_message(self, format: str, *args) -> None:
        if not self.server.quiet:
            print("cvm-emulator: " + format % args, file=sys.stderr, flush=True)


def load_credentials(args: argparse.Namespace) -> dict[str, Credential]:
    credentials = {}
    if args.credentials_file:
        with open(args.credentials_file, encoding="utf-8") as handle:
            entries = json.load(handle)
        if not isinstance(entries, list):
            raise SystemExit("--credentials-file must hold a JSON list of {secretId, secretKey, token?}")
        for entry in entries:
            if not (isinstance(entry, dict) and isinstance(entry.get("secretId"), str)
                    and isinstance(entry.get("secretKey"), str) and isinstance(entry.get("token", ""), str)):
                raise SystemExit("--credentials-file entries need string secretId and secretKey (token optional)")
            credentials[entry["secretId"]] = Credential(entry["secretKey"], entry.get("token", ""),
                                                        entry.get("account", "main"))
    if bool(args.secret_id) != bool(args.secret_key):
        raise SystemExit("--secret-id and --secret-key go together")
    if args.secret_id:
        credentials[args.secret_id] = Credential(args.secret_key, args.token or "")
    return credentials


def write_port_file(path: str, port: int) -> None:
    temporary = f"{path}.tmp.{os.getpid()}"
    with open(temporary, "w", encoding="ascii") as handle:
        handle.write(f"{port}\n")
    os.replace(temporary, path)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Tencent Cloud CVM API emulator for end-to-end tests.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", help="write the port number here once listening")
    parser.add_argument("--secret-id")
    parser.add_argument("--secret-key")
    parser.add_argument("--token", help="the credential's session token (X-TC-Token)")
    parser.add_argument("--credentials-file", help="JSON list of {secretId, secretKey, token?}")
    parser.add_argument("--pending-seconds", type=float, default=2.0)
    parser.add_argument("--terminating-seconds", type=float, default=1.0)
    parser.add_argument("--journal", help="append every journal entry to this file as a JSON line")
    parser.add_argument("--seed", type=int, help="seed instance ids and tag-index drops (reproducible runs)")
    parser.add_argument("--quiet", action="store_true", help="no access log on stderr")
    parser.add_argument("--self-test", action="store_true", help="check the signer against the official examples")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()

    emulator = Emulator(args.pending_seconds, args.terminating_seconds, args.journal, args.seed)
    emulator.credentials.update(load_credentials(args))
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.emulator = emulator
    server.quiet = args.quiet

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    serving = threading.Thread(target=server.serve_forever, name="http", daemon=True)
    serving.start()
    host, port = server.server_address[:2]
    if args.port_file:
        write_port_file(args.port_file, port)
    print(f"cvm-emulator listening on http://{host}:{port}", flush=True)
    while not stop.wait(0.5):
        pass
    server.shutdown()
    server.server_close()
    emulator.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
