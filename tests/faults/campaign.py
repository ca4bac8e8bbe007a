#!/usr/bin/env python3
"""Randomized fault campaign for spotpool (the invariants of docs/how-it-works.md, under faults).

One real kube-apiserver + etcd (scripts/k8s-up into a temporary directory, k8s-down at
the end) is shared by every schedule. Each schedule gets, from its seed alone
(random.Random(seed)), its own namespace, its own CVM emulator process (tests/
cvm_emulator.py --seed SEED) and its own controller process(es) (`spotpool run
--namespace NS`), so schedules run in parallel independently:

  setup    1-3 pools (minimum/maximum/replicas small, maximum <= 4; credentials from the
           controller's environment, a Secret, or inline), foreign instances (untagged,
           and tagged with identities that are not this namespace's pools), one
           controller, or two with --leader-elect;
  faults   for 20-40 s a seeded timeline of: kill -9 of a controller and restart; kill
           hooks (SIGKILL exactly before/after RunInstances or TerminateInstances);
           lost replies (applyThenFail, with and without a reply); invisible launches;
           tag-index lag and drops; throttling; error codes (capacity, auth, unknown,
           InternalError); HTTP 5xx; latency; LAUNCH_FAILED; spec edits (kubectl patch
           of minimum/maximum/replicas); kubectl scale; spot reclaims; deletion of a
           pool while its launch is in flight; SIGSTOP of the leader then SIGCONT; a
           (rare, shared) apiserver restart; and the kinds of issue 19 (drawn after all
           the others, so an older seed keeps its other draws):
             restart_mid_launch  a kill hook SIGKILLs the leader as RunInstances answers,
                      while that launch's first instance stays out of tag listings for
                      the launch grace + 4..20 s (emulator fault tagIndexLagOneSeconds;
                      visible by ID); the pool is made to launch two when it can (a scale
                      up or a reclaim of two);
             cred_rotation  every 2-5 s for 10-25 s, a new SecretId/SecretKey is added to
                      the emulator and written to the Secret and to inline specs; the old
                      one is revoked 1-3 s later (the environment's SECRET_ID stays);
             lagging_watch  each controller reaches the apiserver through its own
                      KubeProxy (tests/faults/kubeproxy.py, an HTTPS proxy): for 8-20 s
                      watch events are delayed 0.5-4 s, open watch streams are cut 1-3
                      times, and 0-2 reconnects are sent on from an older resourceVersion
                      (the apiserver replays events the controller already saw);
             long_names  a 63-character namespace and some pools with 253-character
                      names (an owner string of 317 characters, tagged as its first 222,
                      '#' and a digest);
             leader_cutoff  two controllers with leader election, each behind a proxy;
                      the emulator answers slowly (1.5-6 s) and sometimes throttles Run/
                      Terminate to 0.5/s; once a call is being answered slowly (a Run or
                      Terminate preferred), the leader's proxy blackholes all its
                      apiserver traffic for 8-14 s (up to 10 s more until the standby
                      holds the Lease); 7.5 s after the cut one instance is shut down, for
                      the new leader to clean up and the deposed one to leave alone;
             lease_delete  kubectl delete lease spotpool, once or twice;
             notice   spot notices (issue 18), 1-2: the campaign plays the kubelets (a
                      Node per live instance of its pools, providerID qcloud:///900002/
                      <id>, Ready) and the notice agent: the Node of one instance of a pool
                      gets SpotTerminating=True "reclaim at <deadline>", and the emulator
                      reclaims it at the deadline. Half the notices come as a SpotNotice in
                      the pool's namespace instead (an agent on a host that is not a Node),
                      the earliest of an instance's notices governing. Variants: early
                      (20-45 s ahead), late (1-4 s ahead), repeated (written again 2-6 s
                      later with the deadline moved by -5..+5 s: a second SpotNotice),
                      unreclaimed (10-30 s ahead, never reclaimed; half of the Node
                      conditions withdrawn, status False, halfway; a SpotNotice cannot be);
           and the kinds of issue 27 (a Node's word is a claim, not a fact), drawn after
           those, each in some schedules (--force KIND draws it in every one, leaving the
           other draws as they were). A schedule with any of them or `notice` plays the
           kubelets: every RUNNING instance of its pools gets a Node, Ready, InternalIP =
           the instance's private IP (each schedule's emulator gives its own 10.N.x.y),
           and says which instance it is in the schedule's node style: providerID,
           the instance-id label (the shipped bootstrap), or nothing (named by its IP,
           as TKE does); 1-2 pods are placed on it (spec.nodeName) before it is Ready,
           and a pod being deleted (an eviction) is deleted at once, as a kubelet
           confirms; as the node lifecycle controller, 20 s after an instance is no
           longer live its Node (unless deleted and registered again) gets Ready
           Unknown. Its controllers go through a KubeProxy each, which records their
           Node deletions (with the deleted Node's UID) and evictions:
             forged_label  a Node of no instance (another InternalIP, named to sort first)
                      labelled with a running instance's ID; in 70 % of them with
                      SpotTerminating "reclaim at" 25-40 s ahead, else the claimed
                      instance is reclaimed 8 s later;
             far_deadline  a running instance's Node (or a SpotNotice) says reclaim 2-30
                      years ahead;  past_deadline  ... at 2000-01-01T00:00:00Z;
             garbage_deadline  ... at "soon", with fractional seconds, 1969-12-31T23:59:59Z,
                      or a valid time with trailing junk (a SpotNotice's CRD refuses most);
             stale_notice  a condition the agent did not withdraw while it was down:
                      True since 150-600 s, its deadline long past, the instance running;
             fake_notices  5-40 SpotNotices for made-up instance IDs;
             region_change  spec.region and availabilityZone patched to another region
                      (a CRD that refuses it is an acceptable outcome);
             account_change  the credentials Secret swapped for 8-20 s to a key of
                      another emulator account, then back (a pool left held by
                      AccountChanged is settled in the settle phase, below);
             node_delete_fail  a running instance reclaimed, and its controller's next 1-4
                      Node DELETEs answered 500, 503 or 429 by its proxy;
             node_reuse  a running instance's Node deleted and registered again under its
                      name (a new UID): by the same instance, or, once the instance is
                      reclaimed, by a new untagged instance while the controllers'
                      watches lag 2-4 s (TKE names Nodes by IP);
  settle   faults off (faults, kill hooks, throttles, tag-index lag/drops cleared),
           exactly one controller running; while waiting for convergence, the
           campaign plays the operator on a pool held by AccountChanged
           (docs/troubleshooting.md#accountchanged, "Abandon the instances
           knowingly"): if an instance of it (its tag or an ID in its status) is live
           in another account than its credentials name, account-hold is checked, the
           instances are terminated there (/_emulator/terminate, as in the console)
           and status.accountFingerprint removed; a hold without one is left for
           `converged` to report;
  checks   see INVARIANTS below; then every pool is deleted and deletion is checked.

INVARIANTS (each violation names one, with evidence and the replay command):
  peak        per pool, the emulator's high-water mark of live instances tagged
              NS/NAME (stats maxLive) <= the highest `maximum` ever set for the pool;
              with notices, live at each change (stats history) minus the doomed
              instances then (noticed, deadline + 5 s not passed, not gone yet) <= it:
              maximum is exceeded only by doomed instances and only until their deadline;
  peak-now    a fresh launch (first call with its ClientToken) never brings the live
              count above the highest `maximum` in effect during the 10 s before it,
              doomed instances not counted (resumed launches are judged by `peak` only: their count was decided
              earlier and the outcome must be resolved);
  launches    instances launched for a pool <= upward variation of its launch target
              over the schedule + reclaimed + LAUNCH_FAILED + noticed instances the
              emulator did not reclaim. The launch target T(t) is
              clamp(replicas, min, max) when replicas is set, else minimum, and 0 once
              the pool is deleted; its upward variation is the sum of every increase of
              T, starting from 0 (this covers instances spotpool terminated on a scale-
              down that later had to be replaced). Every legitimate launch is caused by
              one of these; a double launch (same need served twice) exceeds it;
  foreign     no TerminateInstances ever named a foreign instance, every foreign
              instance is still there and RUNNING; no instance was terminated that the
              schedule's controllers had not launched;
  converged   within CONVERGE_S (60 s) of faults off, each pool's live count is
              clamp(replicas) (or within [minimum, maximum] without replicas) and
              .status.size agrees, instances doomed by a notice of the last 15 min
              allowed on top, out of the size (controllers run with a launch grace of 20 s:
              SPOTPOOL_LAUNCH_GRACE_SECONDS; no fault hides an instance longer than 10 s;
              and skip an offering that answered "sold out" for 15 s, not 180 s:
              SPOTPOOL_SOLD_OUT_SECONDS, or an injected capacity code would hold a
              single-offering pool past the bound);
  deleted     after deleting every pool (in half the schedules while the tag index
              lags and drops entries, as it does in normal operation), every
              Spotpool object is gone within DELETE_S (90 s); a pool deleted during
              the faults is gone within DELETE_S of faults off;
  account-hold  a pool the campaign settles (above) launched no instance (RunInstances
              with its ClientToken creating one) and terminated none it launched since
              its condition's lastTransitionTime or the Secret's swap back (the later)
              + 2 s, and the condition's message
              names no SecretId nor key; `converged` also fails a pool still held
              without an instance in another account, `launches` allows the
              instances abandoned there;
  leak        then nothing tagged with a (Delete-policy) pool's identity is left,
              in any state (TERMINATING instances get 10 s to vanish), but those
              the campaign terminated in another account;
  secret      the secret key (or its random part) appears in no controller log, no
              event, no Spotpool status (sampled every 5 s during the faults and
              after), no emulator log or journal;
  crash       no controller exited unless the campaign (or a kill hook) killed it;
  fenced      a leader cut off from the apiserver (leader_cutoff) makes no RunInstances
              or TerminateInstances reaching the emulator more than leaseDurationSeconds
              (6) + 1 s after the cut, while it is cut off: its last renewal was before
              the cut, so its Lease has expired by then (docs/how-it-works.md, "Leader
              election": it stops acting before its lease expires). Calls are attributed
              by the User-Agent, which names the holder identity (ending in the pid);
              calls refused by throttling did nothing and do not count;
  protocol    the emulator never received a malformed request (unparseable HTTP, a
              missing or malformed Authorization, a parameter error no fault caused);
  and with the kubelets (issue 27), by the Node-instance pairing the campaign made, not
  by labels:
  node-deleted  no Node deleted by a controller while its instance ran (an instance
              terminated or reclaimed before the deletion's answer is gone), nor a Node of
              no instance, nor a Node this schedule did not register;
  evict       no instance terminated by a controller (a successful TerminateInstances)
              while a pod placed on its Node at least 10 s before had neither been asked
              to evict (POST .../pods/NAME/eviction, whatever the answer) nor gone; an
              instance already reclaimed or shut down is not judged;
  node-left   once every pool is deleted, no Node of an instance gone for 30 s, or, in
              the ip style, 30 s after the campaign marked it Ready Unknown (the check
              waits until then if need be; registered 5 s before it went, and shown in a
              pool status sampled every 5 s: spotpool deletes Nodes of instances it
              recorded) is left;
  doom-bound  no pool status (sampled every second once a notice is out) counts an
              instance doomed (reclaimAt) more than 15 min after the campaign first
              published a notice of it, nor one never noticed;
              and `peak` excuses a doomed instance (any notice published, forged ones
              included, not gone) for at most 15 min after its first notice.

Usage:
  tests/faults/campaign.py [--schedules N] [--first-seed S] [--seed S | --seeds A,B,...]
      [--jobs J] [--bin build/spotpool] [--crd crds/spotpool.yaml] [--duration MIN:MAX]
      [--without KIND,...] [--force KIND,...] [--keep] [--workdir DIR]
  make faults [SCHEDULES=N] [SEED=S] [JOBS=J] [DURATION=MIN:MAX] [WITHOUT=KIND,...] [FORCE=KIND,...]

Fault kinds (for --without): kill9 killhook lost_reply invisible tag_index throttle
error_code http5xx latency launch_fail spec_edit scale reclaim delete_mid_launch
leader_pause apiserver_restart restart_mid_launch cred_rotation lagging_watch long_names
leader_cutoff lease_delete notice, and (also for --force) forged_label far_deadline
past_deadline garbage_deadline stale_notice fake_notices region_change account_change
node_delete_fail node_reuse.

The invariants hold across both controllers: the emulator counts every instance and call
whoever made it, every controller's log is searched for secrets, any controller exiting by
itself is a crash. Calls signed with a revoked key (AuthFailure.SecretIdNotFound, the
access log says "revoked-sid=") are not malformed requests.

Prints one line per schedule and, for each failing seed, the violated invariants with
evidence and the replay command; then, per issue-19 kind, in how many schedules it was
drawn and counters showing it happened (restarts mid-launch, rotations and revocations,
calls refused with a revoked key, watch events delayed, streams cut, replays, long-named
pools and their launches, leader cut-offs and during which slow call, standby takeovers,
Lease deletions); ends with "faults: N schedules, V violations, T s". Each proxy writes
kubeproxy-N.log (every request, stream end and fault) in the schedule's directory.
Exit status 1 if any violation, 2 on a setup error. Everything listens on 127.0.0.1;
every process started is killed at the end, also on Ctrl-C (children are started
through `setpriv --pdeathsig KILL`, so they also die if the campaign is killed). Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import calendar
import concurrent.futures
import hashlib
import http.client
import json
import os
import random
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeproxy import KubeProxy  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EMULATOR = os.path.join(ROOT, "tests", "cvm_emulator.py")
TAG_KEY = "spotpool.jokerbai.com/pool"
REGION, ZONE, ITYPE = "ap-singapore", "ap-singapore-2", "GN7.2XLARGE32"
SECRET_ID = "AKIDspotpoolFaultCampaign0000000000"
CONVERGE_S = 60
CRED_ACCOUNT = "main"  # the emulator account of every credential but account_change's
HOLD_SLACK_S = 2       # account-hold: a call in flight when the hold began
DELETE_S = 90
SETTLE_S = 15
LAUNCH_GRACE_S = 20
SOLD_OUT_S = 15
LEASE_DURATION_S = 6
LEASE_CONFIG = (f"leaderElection:\n  leaseDurationSeconds: {LEASE_DURATION_S}\n  renewDeadlineSeconds: 4\n"
                "  retryPeriodSeconds: 1\n")
CAPACITY_CODES = ["ResourceInsufficient.SpecifiedInstanceType", "ResourcesSoldOut.SpecifiedInstanceType",
                  "LimitExceeded.SpotQuota", "InvalidParameterValue.InsufficientOffering"]
AUTH_CODES = ["AuthFailure.SignatureFailure", "AuthFailure.SecretIdNotFound"]
OTHER_CODES = ["InternalError", "InternalError.UnknownError", "FailedOperation.MysteryCondition",
               "UnknownError.Zzz", "RequestLimitExceeded.GlobalRegionUinLimitExceeded"]
ACTIONS = ["RunInstances", "TerminateInstances", "DescribeInstances"]

# ----------------------------------------------------------------------------------
# Process bookkeeping: every child is registered and killed on any exit.
# ----------------------------------------------------------------------------------

_children: set[subprocess.Popen] = set()
_children_lock = threading.Lock()
_stopping = threading.Event()
# setpriv (util-linux) sets PR_SET_PDEATHSIG and execs: children die with the campaign
# even if it is SIGKILLed (a preexec_fn would not be safe with threads).
_SETPRIV = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []


def spawn(argv: list[str], log_path: str, env: dict | None = None) -> subprocess.Popen:
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(_SETPRIV + argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env)
    with _children_lock:
        _children.add(proc)
    return proc


def reap(proc: subprocess.Popen, sig: int = signal.SIGKILL, timeout: float = 10) -> int | None:
    """Stop one child we started (by its pid), wait for it, forget it."""
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGCONT)
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(5)
    with _children_lock:
        _children.discard(proc)
    return proc.returncode


def kill_all_children() -> None:
    with _children_lock:
        procs = list(_children)
    for proc in procs:
        reap(proc, signal.SIGKILL, 5)


# ----------------------------------------------------------------------------------
# Kubernetes (REST with the admin client certificate; kubectl for user-facing edits)
# ----------------------------------------------------------------------------------



def emulator_control(port: int, method: str, path: str, payload: dict | None, timeout: float):
    """One call of the emulator's control API: (HTTP status, decoded JSON)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        body = json.dumps(payload).encode() if payload is not None else None
        conn.request(method, "/_emulator/" + path, body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()

class Kube:
    def __init__(self, k8s_dir: str):
        self.dir = k8s_dir
        with open(os.path.join(k8s_dir, "env")) as handle:
            env = dict(line.split("=", 1) for line in handle.read().splitlines() if "=" in line)
        url = urllib.parse.urlsplit(env["K8S_URL"])
        self.host, self.port = url.hostname, url.port
        self.kubeconfig = env["KUBECONFIG"]
        self.ctx = ssl.create_default_context(cafile=env["K8S_CA_FILE"])
        self.ctx.load_cert_chain(env["K8S_CLIENT_CERT"], env["K8S_CLIENT_KEY"])
        self.restart_lock = threading.Lock()
        self.last_restart = 0.0

    def request(self, method: str, path: str, body=None, content_type: str = "application/json",
                attempts: int = 30) -> tuple[int, dict | None]:
        """One REST call, retried (bounded) while the apiserver is unreachable."""
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(attempts):
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=15)
            try:
                conn.request(method, path, data, {"Content-Type": content_type, "Accept": "application/json"})
                response = conn.getresponse()
                raw = response.read()
                if response.status in (500, 502, 503, 504) and attempt + 1 < attempts:
                    time.sleep(1)
                    continue
                try:
                    return response.status, json.loads(raw) if raw else None
                except ValueError:
                    return response.status, {"raw": raw[:500].decode(errors="replace")}
            except (OSError, http.client.HTTPException):
                if attempt + 1 == attempts:
                    raise
                time.sleep(1)
            finally:
                conn.close()
        raise RuntimeError("unreachable")

    def get(self, path: str) -> dict | None:
        status, obj = self.request("GET", path)
        return obj if status == 200 else None

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        env = dict(os.environ, KUBECONFIG=self.kubeconfig)
        last = None
        for _ in range(12):
            try:
                last = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True,
                                      env=env, timeout=30)
            except subprocess.TimeoutExpired as err:
                last = subprocess.CompletedProcess(err.cmd, 124, "", "timeout")
            if last.returncode == 0 or not check:
                return last
            # Retried unless the apiserver gave a definite answer (the apiserver may be
            # restarting: "connection ... refused", EOF, timeouts, 503).
            permanent = any(s in last.stderr for s in ("(NotFound)", "(Invalid)", "(AlreadyExists)", "(Forbidden)",
                                                        "(BadRequest)", "unknown flag", "error: unable to"))
            if permanent:
                break
            time.sleep(1.5)
        if check:
            raise RuntimeError(f"kubectl {' '.join(args)}: {last.stderr.strip()[:400]}")
        return last

    def restart_apiserver(self, log) -> bool:
        """At most one restart per 60 s across the whole campaign (the apiserver is shared)."""
        with self.restart_lock:
            if time.time() - self.last_restart < 60:
                return False
            result = subprocess.run([os.path.join(ROOT, "scripts", "k8s-restart-apiserver"), self.dir],
                                    capture_output=True, text=True, timeout=120)
            self.last_restart = time.time()
            log(f"apiserver restart: rc={result.returncode}")
            return result.returncode == 0


# ----------------------------------------------------------------------------------
# The emulator of one schedule
# ----------------------------------------------------------------------------------


class Emu:
    def __init__(self, workdir: str, seed: int, secret_key: str):
        port_file = os.path.join(workdir, "emulator.port")
        self.log_path = os.path.join(workdir, "emulator.log")
        self.journal_path = os.path.join(workdir, "journal.jsonl")
        self.proc = spawn([sys.executable, EMULATOR, "--port", "0", "--port-file", port_file,
                           "--secret-id", SECRET_ID, "--secret-key", secret_key, "--pending-seconds", "1",
                           "--terminating-seconds", str(TERMINATING_S), "--journal", self.journal_path, "--seed", str(seed)],
                          self.log_path)
        deadline = time.time() + 20
        port = ""
        while not port:
            if time.time() > deadline or self.proc.poll() is not None:
                with open(self.log_path, errors="replace") as handle:
                    raise RuntimeError("emulator did not start: " + handle.read()[-500:])
            time.sleep(0.1)
            if os.path.exists(port_file):
                with open(port_file) as handle:
                    port = handle.read().strip()
        self.port = int(port)
        self.url = f"http://127.0.0.1:{self.port}"

    def call(self, method: str, path: str, payload: dict | None = None):
        for attempt in range(3):
            try:
                status, data = emulator_control(self.port, method, path, payload, timeout=20)
                if status != 200:
                    raise RuntimeError(f"emulator {method} {path} {payload}: {status} {data}")
                return data
            except (OSError, http.client.HTTPException):
                if attempt == 2:
                    raise
                time.sleep(0.5)

    def post(self, path: str, payload: dict):
        return self.call("POST", path, payload)

    def get(self, path: str):
        return self.call("GET", path)

    def stats(self, ns: str, name: str, history: bool = False) -> dict:
        value = urllib.parse.quote(owner_tag(ns, name), safe="")
        return self.get(f"stats?tagKey={urllib.parse.quote(TAG_KEY, safe='')}&tagValue={value}"
                        + ("&history=1" if history else ""))


# ----------------------------------------------------------------------------------
# Schedule generation (pure: seed -> plan)
# ----------------------------------------------------------------------------------


@dataclass
class PoolPlan:
    name: str
    minimum: int
    maximum: int
    replicas: int | None
    creds: str            # env | secret | inline
    retain: bool


@dataclass
class Event:
    t: float
    kind: str
    args: dict = field(default_factory=dict)

    def label(self) -> str:
        a = self.args
        if self.kind in ("lost_reply", "error_code", "http5xx", "latency"):
            return f"{self.kind}:{a['action'][:-9] or a['action']}"
        if self.kind == "killhook":
            return f"killhook:{a['action'][:-9]}/{a['when']}"
        if self.kind in ("spec_edit", "scale", "reclaim", "delete_mid_launch", "restart_mid_launch"):
            return f"{self.kind}:{short(a['pool'])}"
        if self.kind == "notice":
            return f"notice:{a['variant']}:{short(a['pool'])}"
        if self.kind in ISSUE27_KINDS and self.kind != "fake_notices":
            variant = a.get("form") or a.get("variant") or a.get("region") or ""
            variant += "/SpotNotice" if a.get("channel") == "spotnotice" else ""
            return f"{self.kind}:{variant + ':' if variant else ''}{short(a['pool'])}"
        return self.kind


def rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def clock(t: float) -> str:
    """A time of the schedule, to the tenth of a second (local time, as the logs)."""
    return time.strftime("%H:%M:%S", time.localtime(t)) + f".{int(t * 10) % 10}"


def short(name: str) -> str:
    """A pool name for one-line output (a 253-character name is shown by its start and length)."""
    return name if len(name) <= 16 else f"{name[:4]}..({len(name)})"


def account_hold(status: dict) -> dict | None:
    """The pool's Degraded condition if it is True for AccountChanged."""
    return next((c for c in status.get("conditions") or [] if c.get("type") == "Degraded"
                 and c.get("status") == "True" and c.get("reason") == "AccountChanged"), None)


def owner_tag(ns: str, name: str) -> str:
    """The value of the pool tag spotpool gives a pool's instances (docs/how-it-works.md,
    "Long pool names"): namespace/name, or past 255 characters its first 222, '#' and 32
    hex digits of its SHA-256."""
    owner = f"{ns}/{name}"
    if len(owner) <= 255:
        return owner
    return owner[:222] + "#" + hashlib.sha256(owner.encode()).hexdigest()[:32]


@dataclass
class Plan:
    seed: int
    pools: list[PoolPlan]
    leader: bool
    foreign_untagged: int
    foreign_tagged: list[str]
    duration: float
    background_index: dict | None
    events: list[Event]
    delete_index: dict | None = None
    long_names: bool = False       # a 63-character namespace, some pools with 253-character names
    leader_drawn: bool = False     # leader election as first drawn (faults below may require it)
    node_style: str = "provider"   # how the campaign's kubelets say which instance a Node is (NODE_STYLES)

    def finalize(self, without: set[str]) -> None:
        """Leaves out the kinds in `without`, then sets what the remaining faults need."""
        if without:
            # Drawn first, filtered after: the remaining events keep their seed's times.
            self.events = [e for e in self.events if e.kind not in without]
            if "tag_index" in without:
                self.background_index = self.delete_index = None
            if "long_names" in without and self.long_names:
                self.long_names = False
                renamed = {}
                for i, pool in enumerate(self.pools):
                    renamed[pool.name] = pool.name = f"p{i}"
                for e in self.events:
                    if "pool" in e.args:
                        e.args["pool"] = renamed.get(e.args["pool"], e.args["pool"])
        self.leader = self.leader_drawn or any(e.kind in NEEDS_LEADER for e in self.events)

    @property
    def kubelets(self) -> bool:
        """The campaign plays the kubelets: a Node with pods per running instance."""
        return any(e.kind in KUBELET_KINDS for e in self.events)

    @property
    def proxied(self) -> bool:
        """Controllers talk to the apiserver through a KubeProxy each (with kubelets, the
        proxies see the controllers' Node deletions and evictions)."""
        return self.kubelets or any(e.kind in ("lagging_watch", "leader_cutoff") for e in self.events)


# The fault kinds of issue 19, drawn after every other draw of a seed (so the older kinds of
# a seed keep their draws), each in some of the schedules.
NEW_KINDS = ("restart_mid_launch", "cred_rotation", "lagging_watch", "long_names", "leader_cutoff",
             "lease_delete", "notice")
NOTICE_VARIANTS = ("early", "late", "repeated", "unreclaimed")
# A doomed instance excuses going above maximum until its deadline, plus this much for the
# TerminateInstances (or the emulator's reclaim) that ends it.
NOTICE_SLACK_S = 5.0
# How long a terminated instance stays live (TERMINATING) in the emulator.
TERMINATING_S = 1
NODE_PROVIDER = "qcloud:///900002/"
NEEDS_LEADER = ("leader_cutoff", "lease_delete")
# The fault kinds of issue 27 (a Node's word is a claim, not a fact), drawn after those of
# issue 19, each with its probability.
ISSUE27_KINDS = {"forged_label": 0.12, "far_deadline": 0.12, "past_deadline": 0.12, "garbage_deadline": 0.12,
                 "stale_notice": 0.1, "fake_notices": 0.08, "region_change": 0.08, "account_change": 0.08,
                 "node_delete_fail": 0.12, "node_reuse": 0.1}
KUBELET_KINDS = ("notice", *ISSUE27_KINDS)
KINDS = ("kill9", "killhook", "lost_reply", "invisible", "tag_index", "throttle", "error_code", "http5xx", "latency",
         "launch_fail", "spec_edit", "scale", "reclaim", "delete_mid_launch", "leader_pause", "apiserver_restart",
         *NEW_KINDS, *ISSUE27_KINDS)
# How a kubelet of the campaign says which instance its Node is, besides InternalIP = the
# instance's private IP: providerID (TKE), the label spotpool's bootstrap sets, or nothing
# (the Node named after its IP, as TKE names them).
NODE_STYLES = ("provider", "label", "ip")
NODE_LABEL = "spotpool.jokerbai.com/instance-id"
# A notice dooms an instance for at most this long after it was first published (issue 27,
# D1: the claimed deadline clamped to 10 min, then 5 min before it counts as false).
DOOM_MAX_S = 900
# A pod counts against a termination only if placed this long before it (a Node and its
# pods appearing while a pass that decided without them runs: latency faults hold a
# cloud answer up to 6 s).
POD_MARGIN_S = 10
# The Node of an instance gone this long is to be deleted (a failed deletion retried); a
# Node that declares no instance (node style "ip"), this long after its Ready is Unknown.
NODE_LEFT_S = 30
# The node lifecycle controller's part: a Node whose kubelet ended (its instance no longer
# live in the emulator) has its Ready marked Unknown this long after. A real cluster's
# node-monitor-grace-period is 40 s; 20 keeps schedules short.
NODE_UNKNOWN_S = 20
# How long after its instance went the check waits for an "ip" Node's Ready Unknown (a
# noticed reclaim is journalled when announced, done up to 2 min later).
UNKNOWN_WAIT_S = 180
# Instance states in which a kubelet runs (the emulator's LIVE_STATES).
KUBELET_STATES = ("PENDING", "RUNNING", "STARTING", "REBOOTING")
GARBAGE_FORMS = ("unparseable", "fractional", "pre1970", "junk")
OTHER_REGIONS = ("ap-tokyo", "ap-shanghai", "ap-seoul")


def make_plan(seed: int, duration_range: tuple[float, float], force: frozenset = frozenset()) -> Plan:
    rng = random.Random(seed)
    pools = []
    for i in range(rng.randint(1, 3)):
        maximum = rng.randint(1, 4)
        minimum = rng.randint(0, maximum)
        replicas = rng.randint(minimum, maximum) if rng.random() < 0.5 else None
        creds = rng.choices(["env", "secret", "inline"], [6, 3, 1])[0]
        pools.append(PoolPlan(f"p{i}", minimum, maximum, replicas, creds, rng.random() < 0.1))
    leader = rng.random() < 0.3
    foreign_untagged = rng.randint(0, 2)
    foreign_tagged = rng.sample(["{ns}/p0-x", "other-{ns}/p0", "{ns}/ghost", "{ns}x/p1", "elsewhere/p0"],
                                rng.randint(0, 3))
    duration = rng.uniform(*duration_range)
    background = None
    if rng.random() < 0.6:
        background = {"tagIndexLagSeconds": round(rng.uniform(0, 4), 1),
                      "tagIndexDropProbability": round(rng.uniform(0.05, 0.3), 2),
                      "tagIndexDropSeconds": round(rng.uniform(2, 8), 1)}
    kinds = {"kill9": 3, "killhook": 3, "lost_reply": 3, "invisible": 2, "tag_index": 3, "throttle": 1,
             "error_code": 3, "http5xx": 2, "latency": 2, "launch_fail": 1, "spec_edit": 3, "scale": 2,
             "reclaim": 3, "delete_mid_launch": 1}
    if leader:
        kinds["leader_pause"] = 3
    names, weights = list(kinds), list(kinds.values())
    events = []
    deleted_once = False
    for _ in range(rng.randint(6, 14)):
        t = round(rng.uniform(0, duration), 1)
        kind = rng.choices(names, weights)[0]
        pool = rng.choice(pools).name
        action = rng.choices(ACTIONS, [5, 3, 2])[0]
        a: dict = {}
        if kind == "kill9":
            a = {"which": rng.randint(0, 1), "restart_after": round(rng.uniform(0, 3), 1)}
        elif kind == "killhook":
            a = {"action": rng.choice(ACTIONS[:2]), "when": rng.choice(["before", "after"]),
                 "restart_after": round(rng.uniform(0.5, 2), 1)}
        elif kind == "lost_reply":
            a = {"action": action, "drop": rng.random() < 0.5, "times": rng.randint(1, 2)}
        elif kind == "invisible":
            a = {"seconds": round(rng.uniform(2, 10), 1), "times": rng.randint(1, 2)}
        elif kind == "tag_index":
            a = {"tagIndexLagSeconds": round(rng.uniform(0, 8), 1),
                 "tagIndexDropProbability": round(rng.uniform(0.1, 0.5), 2),
                 "tagIndexDropSeconds": round(rng.uniform(1, 6), 1), "window": round(rng.uniform(5, 15), 1)}
        elif kind == "throttle":
            a = {"action": action, "perSecond": rng.choice([0.2, 0.5, 1, 2]), "window": round(rng.uniform(3, 10), 1)}
        elif kind == "error_code":
            group = rng.choice([CAPACITY_CODES, AUTH_CODES, OTHER_CODES])
            a = {"action": action if group is not CAPACITY_CODES else "RunInstances", "code": rng.choice(group),
                 "times": rng.randint(1, 3)}
        elif kind == "http5xx":
            a = {"action": action, "status": rng.choice([500, 502, 503, 504]), "times": rng.randint(1, 3)}
        elif kind == "latency":
            a = {"action": action, "ms": rng.randint(300, 4000), "times": rng.randint(1, 3)}
        elif kind == "launch_fail":
            a = {"times": 1}
        elif kind == "spec_edit":
            maximum = rng.randint(1, 4)
            minimum = rng.randint(0, maximum)
            replicas = rng.randint(minimum, maximum) if rng.random() < 0.6 else None
            a = {"pool": pool, "minimum": minimum, "maximum": maximum, "replicas": replicas}
        elif kind == "scale":
            a = {"pool": pool, "fraction": rng.random()}
        elif kind == "reclaim":
            a = {"pool": pool, "count": rng.randint(1, 2), "shutdown": rng.random() < 0.25}
        elif kind == "delete_mid_launch":
            if deleted_once or len(pools) == 1:
                kind, a = "reclaim", {"pool": pool, "count": 1, "shutdown": False}
            else:
                deleted_once = True
                a = {"pool": pool, "invisible": round(rng.uniform(3, 8), 1)}
        elif kind == "leader_pause":
            a = {"hold": round(rng.uniform(3, 12), 1)}
        events.append(Event(t, kind, a))
    if rng.random() < 0.06:
        events.append(Event(round(rng.uniform(0, duration), 1), "apiserver_restart"))
    events.sort(key=lambda e: e.t)
    # The tag index lags and drops entries in normal operation too (docs/how-it-works.md, "Visibility"):
    # half the schedules delete their pools while it does.
    delete_index = None
    if rng.random() < 0.5:
        delete_index = {"tagIndexLagSeconds": round(rng.uniform(0, 3), 1),
                        "tagIndexDropProbability": round(rng.uniform(0.2, 0.5), 2),
                        "tagIndexDropSeconds": round(rng.uniform(2, 6), 1)}
    plan = Plan(seed, pools, leader, foreign_untagged, foreign_tagged, duration, background, events, delete_index,
                leader_drawn=leader)
    draw_new_kinds(rng, plan)
    draw_issue27_kinds(rng, plan, force)
    plan.events.sort(key=lambda e: e.t)
    return plan


def draw_issue27_kinds(rng: random.Random, plan: Plan, force: frozenset) -> None:
    """The faults of issue 27, after every other draw. Each kind's arguments are drawn
    whether or not the kind is, so forcing one (--force) changes no other draw."""
    duration, pools, events = plan.duration, plan.pools, plan.events
    style_draw = rng.random()
    for kind, probability in ISSUE27_KINDS.items():
        drawn = rng.random() < probability or kind in force
        pool, index = rng.choice(pools).name, rng.randint(0, 3)
        t = round(rng.uniform(0.1, 0.7) * duration, 1)
        channel = rng.choice(("node", "node", "spotnotice"))
        if kind == "forged_label":
            a = {"notice": rng.random() < 0.7, "ahead": round(rng.uniform(25, 40), 1)}
        elif kind == "far_deadline":
            a = {"years": rng.randint(2, 30), "channel": channel}
        elif kind == "past_deadline":
            a = {"channel": channel}
        elif kind == "garbage_deadline":
            a = {"form": rng.choice(GARBAGE_FORMS), "ahead": round(rng.uniform(20, 40), 1), "channel": channel}
        elif kind == "stale_notice":
            a = {"age": round(rng.uniform(150, 600), 1)}
        elif kind == "fake_notices":
            a = {"count": rng.randint(5, 40)}
        elif kind == "region_change":
            a = {"region": rng.choice(OTHER_REGIONS)}
        elif kind == "account_change":
            a = {"window": round(rng.uniform(8, 20), 1)}
        elif kind == "node_delete_fail":
            a = {"times": rng.randint(1, 4), "status": rng.choice((500, 503, 429))}
        else:  # node_reuse
            a = {"variant": rng.choice(("same", "other")), "lag": round(rng.uniform(2, 4), 1)}
        if drawn:
            events.append(Event(t, kind, {"pool": pool, "index": index, **a}))
    if any(e.kind == "account_change" for e in events) and not any(p.creds == "secret" for p in pools):
        pools[0].creds = "secret"  # the account is changed in the Secret
    plan.node_style = NODE_STYLES[min(2, int(style_draw * 3))]
    if plan.node_style == "provider" and any(e.kind == "forged_label" for e in events):
        # A providerID outranks a label claim on main: the forgery is tried where it could work.
        plan.node_style = "label" if style_draw < 1 / 6 else "ip"


def long_name(prefix: str, length: int) -> str:
    return (prefix + "l" * length)[:length - 1] + "z"


def draw_new_kinds(rng: random.Random, plan: Plan) -> None:
    """The faults of issue 19, from the same seeded stream, after the other draws."""
    duration, pools, events = plan.duration, plan.pools, plan.events
    if rng.random() < 0.3:
        # Long names: a 63-character namespace, and some pools with 253-character names
        # (owner strings of 317 characters: more than a Tencent tag value takes).
        plan.long_names = True
        longs = [rng.random() < 0.6 for _ in pools]
        if not any(longs):
            longs[0] = True
        renamed = {}
        for i, (pool, is_long) in enumerate(zip(pools, longs)):
            if is_long:
                renamed[pool.name] = pool.name = long_name(f"p{i}-", 253)
        for e in events:  # the older kinds drawn above name the pools
            if "pool" in e.args:
                e.args["pool"] = renamed.get(e.args["pool"], e.args["pool"])
    if rng.random() < 0.35:
        # Restarts between a launch and its confirmation: the leader is killed as
        # RunInstances answers, and the launch's first instance stays out of tag listings
        # for longer than the launch grace (visible by ID).
        for _ in range(rng.randint(1, 2)):
            events.append(Event(round(rng.uniform(0, duration * 0.8), 1), "restart_mid_launch", {
                "pool": rng.choice(pools).name, "lag": round(rng.uniform(LAUNCH_GRACE_S + 4, LAUNCH_GRACE_S + 20), 1),
                "restart_after": round(rng.uniform(0.5, 2), 1)}))
    if rng.random() < 0.3:
        # Credentials rotated every few seconds: a new SecretId/SecretKey in the Secret and
        # in inline specs, the old one revoked after a short overlap.
        if not any(p.creds in ("secret", "inline") for p in pools):
            pools[0].creds = "secret"
        events.append(Event(round(rng.uniform(0, duration * 0.3), 1), "cred_rotation", {
            "window": round(rng.uniform(10, 25), 1), "period": round(rng.uniform(2, 5), 1),
            "overlap": round(rng.uniform(1, 3), 1)}))
    if rng.random() < 0.3:
        # A lagging watch: event delivery delayed, streams cut, reconnects sent on from an
        # older resourceVersion.
        window = round(rng.uniform(8, 20), 1)
        events.append(Event(round(rng.uniform(0, duration * 0.6), 1), "lagging_watch", {
            "window": window, "delay": round(rng.uniform(0.5, 4), 1),
            "cuts": sorted(round(rng.uniform(0, window), 1) for _ in range(rng.randint(1, 3))),
            "replays": rng.randint(0, 2)}))
    if rng.random() < 0.25:
        # The leader cut off from the apiserver while a cloud call of its is answered slowly
        # (and, sometimes, throttled); the standby takes over.
        events.append(Event(round(rng.uniform(0, duration * 0.6), 1), "leader_cutoff", {
            "latency": rng.randint(1500, 6000), "hold": round(rng.uniform(8, 14), 1),
            "throttle": rng.random() < 0.5, "pool": rng.choice(pools).name}))
    if rng.random() < 0.25:
        for _ in range(rng.randint(1, 2)):
            events.append(Event(round(rng.uniform(0, duration), 1), "lease_delete"))
    if rng.random() < 0.3:
        # Spot notices (issue 18), drawn last: a Node condition with a deadline, the
        # instance reclaimed then (or, unreclaimed, never).
        for _ in range(rng.randint(1, 2)):
            variant = rng.choice(NOTICE_VARIANTS)
            ahead = {"early": (20, 45), "late": (1, 4), "repeated": (15, 30), "unreclaimed": (10, 30)}[variant]
            events.append(Event(round(rng.uniform(0, duration * 0.8), 1), "notice", {
                "pool": rng.choice(pools).name, "variant": variant, "ahead": round(rng.uniform(*ahead), 1),
                "index": rng.randint(0, 3), "again": round(rng.uniform(2, 6), 1),
                "shift": round(rng.uniform(-5, 5), 1), "withdraw": rng.random() < 0.5,
                "channel": rng.choice(("node", "spotnotice"))}))


# ----------------------------------------------------------------------------------
# Running one schedule
# ----------------------------------------------------------------------------------


@dataclass
class Violation:
    invariant: str
    message: str
    evidence: list[str] = field(default_factory=list)


@dataclass
class Controller:
    index: int
    proc: subprocess.Popen | None = None
    expected_exit: bool = False
    restart_at: float | None = None
    stopped: bool = False
    enabled: bool = True
    proxy: KubeProxy | None = None   # its apiserver traffic goes through this (plan.proxied)
    kubeconfig: str | None = None


class Schedule:
    def __init__(self, seed: int, campaign: "Campaign"):
        self.seed = seed
        self.c = campaign
        self.kube: Kube = campaign.kube
        self.plan = make_plan(seed, campaign.duration_range, campaign.force)
        self.plan.finalize(campaign.without)
        self.ns = f"faults-{seed}"
        if self.plan.long_names:  # the longest namespace Kubernetes takes: 63 characters
            self.ns = long_name(f"faults-{seed}-", 63)
        self.dir = os.path.join(campaign.workdir, f"seed-{seed}")
        os.makedirs(self.dir, exist_ok=True)
        self.secret_nonce = os.urandom(6).hex()  # also found when only part of the key leaks
        self.secret_key = f"FaultKey{seed}z{self.secret_nonce}NeverLog"
        self.violations: list[Violation] = []
        self.applied: list[str] = []
        self.controllers: list[Controller] = []
        self.emu: Emu | None = None
        self.foreign: list[str] = []
        self.uids: dict[str, str] = {}
        # per pool: [(time, minimum, maximum, replicas, deleted)]
        self.spec_log: dict[str, list[tuple]] = {}
        self.deleted_at: dict[str, float] = {}
        self.stuck: set[str] = set()
        self.statuses: dict[str, list[str]] = {}
        self.converged_after: float | None = None  # seconds after faults off
        self.deleted_after: float | None = None    # seconds for every pool to go
        self.killed_pids: set[int] = set()
        self.crashes: list[str] = []
        self.log_lines: list[str] = []
        # Credentials of the Secret and inline specs (rotated by cred_rotation); the
        # controller's environment keeps SECRET_ID, which is never revoked.
        self.cred = (SECRET_ID, self.secret_key)
        self.rotations = 0
        self.inline_moved: set[str] = set()  # inline pools moved into the Secret
        # Evidence that the faults of issue 19 happened (summed in the campaign summary).
        self.counts: dict[str, int] = {}
        self.timers: list = []
        self.started_pids: set[str] = set()
        self.cutoffs: list[list] = []  # [pid, cut at, reconnected at] of each leader_cutoff
        # Spot notices: {pool, id, t, deadline, reclaimed} each; the Nodes the campaign
        # made (as kubelets would), its notice timers, and the thread making the Nodes.
        self.notices: list[dict] = []
        # Every Node the campaign registered, one entry per incarnation: {name, uid,
        # instance (None: a Node of no pool instance), ip, created, deleted (by the
        # campaign), pods: {name: placed at}}; node_of: instance -> its current incarnation.
        self.incarnations: list[dict] = []
        self.node_of: dict[str, dict] = {}
        self.pods_gone: dict[str, float] = {}      # pod name -> when the kubelet saw it go
        self.node_lock = threading.RLock()
        self.secret_swapped = False                # account_change: the Secret holds another account
        self.swapped_back_at = 0.0                 # ... and when it held this account's again
        self.abandoned: dict[str, list[str]] = {}  # pool -> instances the operator terminated in "other"
        self.false_holds: dict[str, str] = {}      # pool -> why its AccountChanged hold has no reason
        self.doom_seen: dict[tuple[str, str], tuple[float, str]] = {}  # (pool, id) -> (seen at, reclaimAt)
        self.recorded: set[str] = set()            # instances a status snapshot showed
        self.inline_cred: dict[str, str] = {}      # pool -> the secretId its inline spec holds (if rotated)
        self.notice_timers: list[threading.Timer] = []
        self.kubelet_stop = threading.Event()
        self.kubelet: threading.Thread | None = None

    # -- small helpers ------------------------------------------------------------
    def log(self, msg: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {msg}"
        self.log_lines.append(line)
        with open(os.path.join(self.dir, "campaign.log"), "a") as handle:
            handle.write(line + "\n")

    def violate(self, invariant: str, message: str, evidence: list[str] | None = None) -> None:
        self.violations.append(Violation(invariant, message, evidence or []))
        self.log(f"VIOLATION {invariant}: {message}")

    def sp_path(self, name: str = "") -> str:
        return f"/apis/devops.jokerbai.com/v1/namespaces/{self.ns}/spotpools" + (f"/{name}" if name else "")

    def pool_obj(self, name: str) -> dict | None:
        return self.kube.get(self.sp_path(name))

    def record_spec(self, name: str, obj: dict | None, at: float, deleted: bool = False) -> None:
        """Remembers the spec (or the deletion) of a pool as of `at`, the time just before
        the change was sent."""
        spec = (obj or {}).get("spec", {})
        self.spec_log.setdefault(name, []).append(
            (at, spec.get("minimum", 0), spec.get("maximum", 0), spec.get("replicas"), deleted))

    # -- controllers ----------------------------------------------------------------
    def start_controller(self, ctl: Controller) -> None:
        argv = [self.c.bin, "run", "--namespace", self.ns, "--resync", "2", "--log-format", "plain",
                "--listen", "", "--config", os.path.join(self.dir, "spotpool.yaml")]
        if self.plan.leader:
            argv += ["--leader-elect", "--lease-name", "spotpool", "--lease-namespace", self.ns]
        # A launched instance no lookup shows yet counts as live for the launch grace; the
        # faults hide one for at most 10 s, so 20 s (not the default 60) keeps convergence
        # after faults off well inside CONVERGE_S. (An environment variable: a binary that
        # does not know the setting ignores it.)
        env = dict(os.environ, KUBECONFIG=ctl.kubeconfig or self.kube.kubeconfig, SPOTPOOL_CVM_ENDPOINT=self.emu.url, SPOTPOOL_STS_ENDPOINT=self.emu.url,
                   TENCENTCLOUD_SECRET_ID=SECRET_ID, TENCENTCLOUD_SECRET_KEY=self.secret_key,
                   SPOTPOOL_LAUNCH_GRACE_SECONDS=str(LAUNCH_GRACE_S),
                   SPOTPOOL_SOLD_OUT_SECONDS=str(SOLD_OUT_S))
        for var in ("SPOTPOOL_NAMESPACES", "SPOTPOOL_LEADER_ELECT", "SPOTPOOL_DRY_RUN"):
            env.pop(var, None)
        log_path = os.path.join(self.dir, f"controller-{ctl.index}.log")
        with open(log_path, "a") as handle:
            handle.write(f"### campaign: start at {time.strftime('%H:%M:%S')}\n")
        ctl.proc = spawn(argv, log_path, env)
        self.started_pids.add(str(ctl.proc.pid))
        ctl.expected_exit = False
        ctl.restart_at = None
        ctl.stopped = False
        self.log(f"controller {ctl.index} started, pid {ctl.proc.pid}")

    def kill_controller(self, ctl: Controller, sig: int = signal.SIGKILL) -> None:
        if ctl.proc and ctl.proc.poll() is None:
            ctl.expected_exit = True
            self.killed_pids.add(ctl.proc.pid)
            reap(ctl.proc, sig)
            self.log(f"controller {ctl.index} pid {ctl.proc.pid} stopped with signal {sig}")

    def hook_killed(self, pid: int) -> bool:
        try:
            with open(self.emu.journal_path) as handle:
                for line in handle:
                    entry = json.loads(line)
                    if entry.get("killed", {}).get("pid") == pid and entry["killed"].get("result") == "sent":
                        return True
        except (OSError, ValueError):
            pass
        return False

    def supervise(self) -> None:
        """Restarts controllers that died (kill hooks) or were killed; notes crashes."""
        now = time.time()
        for ctl in self.controllers:
            if not ctl.enabled:
                continue
            if ctl.proc is not None and ctl.proc.poll() is not None and ctl.restart_at is None:
                rc = ctl.proc.returncode
                if not ctl.expected_exit and not self.hook_killed(ctl.proc.pid):
                    self.crashes.append(f"controller {ctl.index} pid {ctl.proc.pid} exited by itself, status {rc}")
                    self.log(self.crashes[-1])
                with _children_lock:
                    _children.discard(ctl.proc)
                ctl.restart_at = now + (ctl.__dict__.get("next_delay") or 1.0)
            if ctl.restart_at is not None and now >= ctl.restart_at:
                self.start_controller(ctl)

    def leader_controller(self) -> Controller | None:
        if not self.plan.leader:
            first = self.controllers[0]
            return first if first.proc and first.proc.poll() is None and not first.stopped else None
        lease = self.kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{self.ns}/leases/spotpool")
        holder = ((lease or {}).get("spec") or {}).get("holderIdentity") or ""
        pid = holder.rsplit("_", 1)[-1]
        for ctl in self.controllers:
            if ctl.proc and ctl.proc.poll() is None and str(ctl.proc.pid) == pid and not ctl.stopped:
                return ctl
        return None

    # -- setup ------------------------------------------------------------------------
    def setup(self) -> None:
        with open(os.path.join(self.dir, "spotpool.yaml"), "w") as handle:
            handle.write(LEASE_CONFIG)
        self.emu = Emu(self.dir, self.seed, self.secret_key)
        # Private IPs of this schedule's own: Nodes of every schedule share the apiserver.
        self.emu.post("config", {"addressBase": (self.seed % 200 + 20) << 16})
        self.kube.kubectl("create", "namespace", self.ns)
        if any(p.creds == "secret" for p in self.plan.pools):
            self.kube.kubectl("-n", self.ns, "create", "secret", "generic", "cvm-creds",
                              f"--from-literal=secretId={self.cred[0]}", f"--from-literal=secretKey={self.cred[1]}")
        # Foreign instances first: they exist before any pool and must never be touched.
        common = {"region": REGION, "zone": ZONE, "instanceType": ITYPE}
        if self.plan.foreign_untagged:
            self.foreign += self.emu.post("instances", {**common, "count": self.plan.foreign_untagged})["instanceIds"]
        for value in self.plan.foreign_tagged:
            self.foreign += self.emu.post("instances", {**common, "tags": [
                {"Key": TAG_KEY, "Value": value.format(ns=self.ns)}]})["instanceIds"]
        if self.plan.background_index:
            self.emu.post("config", self.plan.background_index)
        for pool in self.plan.pools:
            spec = {"region": REGION, "availabilityZone": ZONE, "instanceType": ITYPE, "imageId": "img-faults",
                    "minimum": pool.minimum, "maximum": pool.maximum}
            if pool.replicas is not None:
                spec["replicas"] = pool.replicas
            if pool.retain:
                spec["deletionPolicy"] = "Retain"
            if pool.creds == "secret":
                spec["credentialsSecretRef"] = {"name": "cvm-creds"}
            elif pool.creds == "inline":
                spec.update(secretId=self.cred[0], secretKey=self.cred[1])
            manifest = {"apiVersion": "devops.jokerbai.com/v1", "kind": "Spotpool",
                        "metadata": {"name": pool.name, "namespace": self.ns}, "spec": spec}
            at = time.time()
            self.kube.kubectl("apply", "-f", "-", stdin=json.dumps(manifest))
            obj = self.pool_obj(pool.name)
            self.uids[pool.name] = obj["metadata"]["uid"]
            self.record_spec(pool.name, obj, at)
        n = 2 if self.plan.leader else 1
        self.controllers = [Controller(i) for i in range(n)]
        for ctl in self.controllers:
            if self.plan.proxied:
                ctl.proxy = KubeProxy(self.c.k8s_dir, self.kube.host, self.kube.port, log=self.log,
                                      trace_path=os.path.join(self.dir, f"kubeproxy-{ctl.index}.log"))
                ctl.kubeconfig = os.path.join(self.dir, f"kubeconfig-{ctl.index}")
                with open(ctl.kubeconfig, "w") as handle:
                    handle.write(ctl.proxy.kubeconfig(self.c.k8s_dir))
                self.log(f"controller {ctl.index} reaches the apiserver through a proxy on port {ctl.proxy.port}")
            self.start_controller(ctl)
        if self.plan.kubelets:
            # Private IPs of this schedule's own: Nodes of every schedule share the apiserver.
            self.kubelet = threading.Thread(target=self.kubelets, daemon=True)
            self.kubelet.start()

    # -- Nodes and notices (issue 18) ------------------------------------------------------
    def owned_live(self, pool: str | None = None, states=("PENDING", "RUNNING")) -> list[str]:
        owners = {owner_tag(self.ns, p.name) for p in self.plan.pools if pool in (None, p.name)}
        return sorted(i["InstanceId"] for i in self.emu.get("instances")
                      if i["InstanceState"] in states
                      and any(t["Key"] == TAG_KEY and t["Value"] in owners for t in i["Tags"]))

    def instance(self, instance_id: str) -> dict | None:
        return next((i for i in self.emu.get("instances") if i["InstanceId"] == instance_id), None)

    def register_node(self, instance_id: str | None, ip: str, name: str | None = None,
                      labels: dict | None = None, provider: str | None = None) -> dict | None:
        """A Node as a kubelet registers it: pods placed on it, then Ready with its
        InternalIP. Answers its incarnation (None if the name is taken)."""
        style = self.plan.node_style
        if name is None:
            name = f"f{self.seed}-" + (ip.replace(".", "-") if style == "ip" else instance_id)
        labels = {"faults-seed": str(self.seed), **(labels or {})}
        if instance_id and style == "label" and NODE_LABEL not in labels:
            labels[NODE_LABEL] = instance_id
        spec = {}
        if provider or (instance_id and style == "provider" and provider is None):
            spec["providerID"] = provider or NODE_PROVIDER + instance_id
        status, obj = self.kube.request("POST", "/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec})
        if status == 409:
            return None
        if status != 201:
            raise RuntimeError(f"creating Node {name}: HTTP {status}")
        with self.node_lock:
            inc = {"name": name, "uid": obj["metadata"]["uid"], "instance": instance_id, "ip": ip,
                   "created": time.time(), "deleted": None, "pods": {}}
            self.incarnations.append(inc)
            if instance_id:
                self.node_of[instance_id] = inc
        n = sum(1 for i in self.incarnations if i["name"] == name)
        for k in range(1 + int(hashlib.sha256(name.encode()).hexdigest(), 16) % 2):
            pod = f"{name}-{n}-{k}"
            status, _ = self.kube.request("POST", f"/api/v1/namespaces/{self.ns}/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod, "labels": {"faults-seed": str(self.seed)}},
                "spec": {"nodeName": name, "automountServiceAccountToken": False,
                         "containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10"}]}})
            if status == 201:
                inc["pods"][pod] = time.time()
                self.count("pods placed")
        self.count("Nodes registered")
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.kube.request("PATCH", f"/api/v1/nodes/{name}/status", {"status": {
            "addresses": [{"type": "InternalIP", "address": ip}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "faults",
                            "lastHeartbeatTime": now, "lastTransitionTime": now}]}},
            "application/strategic-merge-patch+json")
        return inc

    def ensure_node(self, instance_id: str) -> dict | None:
        """The Node of a running instance of the schedule's pools (registered once)."""
        with self.node_lock:
            if instance_id in self.node_of:
                return self.node_of[instance_id]
        inst = self.instance(instance_id)
        if not inst or inst["InstanceState"] != "RUNNING" or not inst.get("PrivateIpAddresses"):
            return None
        return self.register_node(instance_id, inst["PrivateIpAddresses"][0])

    def node_condition(self, name: str, status: bool, message: str, since: float | None = None) -> int:
        """The agent's report on a Node: SpotTerminating True (with message) or False."""
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since or time.time()))
        cond = {"type": "SpotTerminating", "status": "True" if status else "False",
                "reason": "SpotInstanceTerminating" if status else "SpotInstanceNotTerminating",
                "message": message, "lastHeartbeatTime": at, "lastTransitionTime": at}
        code, _ = self.kube.request("PATCH", f"/api/v1/nodes/{name}/status", {"status": {"conditions": [cond]}},
                                    "application/strategic-merge-patch+json")
        return code

    def node_lifecycle(self) -> None:
        """The node lifecycle controller's part: the Node of an instance no longer live (its
        kubelet ended) gets Ready Unknown NODE_UNKNOWN_S after the campaign first saw it
        so, unless the campaign deleted it (a Node registered again under its name, by
        another instance too, is another incarnation: its own kubelet reports it). The
        patch names the incarnation's UID: another's is refused (the UID is immutable)."""
        live = {i["InstanceId"] for i in self.emu.get("instances") if i["InstanceState"] in KUBELET_STATES}
        now = time.time()
        with self.node_lock:
            ended = [inc for inc in self.incarnations if inc["instance"] and not inc["deleted"]
                     and "unknown" not in inc and inc["instance"] not in live]
        for inc in ended:
            inc.setdefault("ended", now)
            if now < inc["ended"] + NODE_UNKNOWN_S:
                continue
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            code, _ = self.kube.request("PATCH", f"/api/v1/nodes/{inc['name']}/status", {
                "metadata": {"uid": inc["uid"]}, "status": {"conditions": [{
                    "type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                    "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": at,
                    "lastTransitionTime": at}]}}, "application/strategic-merge-patch+json")
            inc["unknown"] = time.time() if code == 200 else None  # None: no Node of that UID left
            self.count("Nodes marked Ready Unknown" if code == 200 else "Nodes gone before Ready Unknown")

    def kubelets(self) -> None:
        """Every second: a Node (with pods) for each running instance of this schedule's
        pools, and pods being deleted (an eviction) deleted at once, as a kubelet confirms;
        the Nodes of instances no longer live marked Ready Unknown (node_lifecycle)."""
        while not self.kubelet_stop.wait(1):
            try:
                for instance_id in self.owned_live(states=("RUNNING",)):
                    self.ensure_node(instance_id)
                self.node_lifecycle()
                if self.notices:  # a doomed instance may show for a second only
                    self.sample_instances()
                pods = self.kube.get(f"/api/v1/namespaces/{self.ns}/pods?labelSelector=faults-seed%3D{self.seed}")
                for pod in (pods or {}).get("items", []):
                    name = pod["metadata"]["name"]
                    if pod["metadata"].get("deletionTimestamp"):
                        self.kube.request("DELETE", f"/api/v1/namespaces/{self.ns}/pods/{name}",
                                          {"gracePeriodSeconds": 0})
                        self.pods_gone.setdefault(name, time.time())
            except Exception as err:  # the emulator restarting, the apiserver restarting: next round
                self.log(f"kubelets: {err}")

    def post_spotnotice(self, instance_id: str, deadline: float) -> None:
        """The agent's report from a host that is not a Node: a SpotNotice in the pool's namespace."""
        status = self.create_spotnotice(f"{instance_id}-{int(deadline)}", instance_id, rfc3339(deadline))
        if status not in (201, 409):
            raise RuntimeError(f"creating the SpotNotice of {instance_id}: HTTP {status}")

    def create_spotnotice(self, name: str, instance_id: str, reclaim_at: str) -> int:
        status, _ = self.kube.request("POST", f"/apis/devops.jokerbai.com/v1/namespaces/{self.ns}/spotnotices", {
            "apiVersion": "devops.jokerbai.com/v1", "kind": "SpotNotice", "metadata": {"name": name},
            "spec": {"instanceId": instance_id, "reclaimAt": reclaim_at, "reportedAt": rfc3339(time.time())}})
        return status

    def set_notice(self, instance_id: str, deadline: float | None) -> None:
        """The agent's report: SpotTerminating True with the deadline, or False (withdrawn)."""
        name = self.node_of[instance_id]["name"]
        if deadline is None:
            self.node_condition(name, False, "notice withdrawn")
        else:
            self.node_condition(name, True, "reclaim at " + rfc3339(deadline))

    def later(self, seconds: float, fn, *args) -> None:
        timer = threading.Timer(max(0.0, seconds), self.guarded, (fn, *args))
        timer.daemon = True
        timer.when = time.time() + max(0.0, seconds)
        self.notice_timers.append(timer)
        timer.start()

    def guarded(self, fn, *args) -> None:
        try:
            fn(*args)
        except Exception as err:
            self.log(f"notice timer {fn.__name__} failed: {err}")

    def notice(self, a: dict) -> str:
        pool = a["pool"]
        if pool in self.deleted_at:
            return "(pool deleted)"
        live = self.owned_live(pool)
        if not live:
            return "(no live instance)"
        instance_id = live[a["index"] % len(live)]
        deadline = int(time.time() + a["ahead"]) + 1.0  # whole seconds, as the message says
        channel = a.get("channel", "node")
        rec = {"pool": pool, "id": instance_id, "t": time.time(), "deadline": deadline, "reclaimed": False,
               "channel": channel}
        if channel == "spotnotice":
            self.post_spotnotice(instance_id, deadline)
            self.count("notices as SpotNotices")
        else:
            if not self.ensure_node(instance_id):
                return "(no Node)"
            self.set_notice(instance_id, deadline)
        self.notices.append(rec)
        self.count("notices")
        if a["variant"] == "repeated":
            self.later(a["again"], self.notice_again, rec, a["shift"])
        elif a["variant"] == "unreclaimed":
            self.count("notices of instances then not reclaimed")
            if a["withdraw"] and channel == "node":
                self.later(a["ahead"] / 2, self.withdraw, rec)
        else:
            self.later(deadline - time.time(), self.reclaim_noticed, rec)
        return f"({instance_id}, {deadline - time.time():.0f} s ahead)"

    def notice_again(self, rec: dict, shift: float) -> None:
        deadline = max(int(time.time()) + 2.0, rec["deadline"] + round(shift))
        if rec["channel"] == "spotnotice":
            self.post_spotnotice(rec["id"], deadline)
        else:
            self.set_notice(rec["id"], deadline)
        rec["deadline"] = max(rec["deadline"], deadline)
        self.count("notices repeated")
        self.log(f"notice repeated: {rec['id']} reclaim at {time.strftime('%H:%M:%S', time.localtime(deadline))}")
        self.later(deadline - time.time(), self.reclaim_noticed, rec)

    def withdraw(self, rec: dict) -> None:
        self.set_notice(rec["id"], None)
        self.count("notices withdrawn")
        self.log(f"notice withdrawn: {rec['id']}")

    def reclaim_noticed(self, rec: dict) -> None:
        if rec["id"] not in self.owned_live(rec["pool"]):
            self.count("noticed instances gone before their deadline")
            return
        rec["reclaimed"] = rec["id"] in self.emu.post("reclaim", {"instanceIds": [rec["id"]]})["reclaimed"]
        self.count("noticed instances reclaimed at the deadline")
        self.log(f"noticed instance {rec['id']} reclaimed at its deadline")

    def doomed_at(self, pool: str, t: float, gone: dict[str, float]) -> int:
        """Instances of the pool that may count as doomed at t: noticed (by any notice the
        campaign published, forged ones included) at most DOOM_MAX_S (+ slack) before,
        not gone. A notice costs at most one instance above maximum for that long. A
        terminated instance stays live in the emulator for TERMINATING_S, so it is doomed
        until then (seed 713: two doomed instances terminated together, the emulator's
        count fell by one at a time)."""
        return len({r["id"] for r in self.notices if r["pool"] == pool and r["t"] - 0.5 <= t
                    <= r["t"] + DOOM_MAX_S + NOTICE_SLACK_S
                    and gone.get(r["id"], float("inf")) + TERMINATING_S + 0.5 > t})

    def wait_notices(self) -> None:
        """Notices are not faults the campaign turns off: the schedule goes on until every
        deadline (and a repeated notice's new one) has passed, so each reclaim happens."""
        while not _stopping.is_set():
            due = max([r["deadline"] for r in self.notices if not r.get("forged")]
                      + [t.when for t in self.notice_timers if t.is_alive()], default=0.0)
            if time.time() > due + 1:
                return
            self.supervise()
            time.sleep(0.5)

    def stop_notices(self) -> None:
        self.kubelet_stop.set()
        for timer in self.notice_timers:
            timer.cancel()
        if self.kubelet:
            self.kubelet.join(timeout=10)
        if self.incarnations:
            self.kube.kubectl("delete", "nodes", "-l", f"faults-seed={self.seed}", "--wait=false", check=False)

    def wait_settled(self, bound: float) -> bool:
        deadline = time.time() + bound
        while time.time() < deadline and not _stopping.is_set():
            self.supervise()
            if self.convergence_problems() == []:
                return True
            time.sleep(1)
        return False

    # -- faults -------------------------------------------------------------------------
    def apply(self, ev: Event, timers: list) -> None:
        a, emu = ev.args, self.emu
        label = ev.label()
        if ev.kind == "kill9":
            alive = [c for c in self.controllers if c.enabled and c.proc and c.proc.poll() is None]
            if not alive:
                return self.log(f"fault {label} skipped: no controller running")
            ctl = alive[a["which"] % len(alive)]
            self.kill_controller(ctl)
            ctl.restart_at = time.time() + a["restart_after"]
        elif ev.kind == "killhook":
            ctl = self.leader_controller()
            if not ctl:
                return self.log(f"fault {label} skipped: no leader running")
            ctl.__dict__["next_delay"] = a["restart_after"]
            emu.post("killhook", {"action": a["action"], "when": a["when"], "pid": ctl.proc.pid,
                                  "comm": os.path.basename(self.c.bin)[:15], "times": 1})
        elif ev.kind == "lost_reply":
            emu.post("fault", {"action": a["action"], "applyThenFail": True, "drop": a["drop"], "times": a["times"]})
        elif ev.kind == "invisible":
            emu.post("fault", {"action": "RunInstances", "invisibleSeconds": a["seconds"], "times": a["times"]})
        elif ev.kind == "tag_index":
            emu.post("config", {k: a[k] for k in ("tagIndexLagSeconds", "tagIndexDropProbability",
                                                  "tagIndexDropSeconds")})
            timers.append((time.time() + a["window"], "tag_index_end"))
        elif ev.kind == "throttle":
            emu.post("throttle", {"action": a["action"], "perSecond": a["perSecond"]})
            timers.append((time.time() + a["window"], ("throttle_end", a["action"])))
        elif ev.kind == "error_code":
            emu.post("fault", {"action": a["action"], "errorCode": a["code"], "times": a["times"]})
            label += f"={a['code']}"
        elif ev.kind == "http5xx":
            emu.post("fault", {"action": a["action"], "httpStatus": a["status"], "times": a["times"]})
        elif ev.kind == "latency":
            emu.post("fault", {"action": a["action"], "latencyMs": a["ms"], "times": a["times"]})
        elif ev.kind == "launch_fail":
            emu.post("fault", {"action": "RunInstances", "launchFail": True, "times": 1})
        elif ev.kind in ("spec_edit", "scale"):
            if a["pool"] in self.deleted_at:
                return
            at = time.time()
            if ev.kind == "spec_edit":
                patch = {"spec": {"minimum": a["minimum"], "maximum": a["maximum"], "replicas": a["replicas"]}}
                self.kube.kubectl("-n", self.ns, "patch", "sp", a["pool"], "--type", "merge", "-p", json.dumps(patch))
                label += f"={a['minimum']}..{a['maximum']}/r{a['replicas']}"
            else:
                obj = self.pool_obj(a["pool"])
                lo, hi = obj["spec"].get("minimum", 0), obj["spec"].get("maximum", 0)
                replicas = lo + int(a["fraction"] * (hi - lo + 1) - 1e-9)
                at = time.time()
                self.kube.kubectl("-n", self.ns, "scale", "sp", a["pool"], f"--replicas={replicas}")
                label += f"={replicas}"
            self.record_spec(a["pool"], self.pool_obj(a["pool"]), at)
        elif ev.kind == "reclaim":
            if a["pool"] in self.deleted_at:
                return
            got = emu.post("reclaim", {"tag": {"Key": TAG_KEY, "Value": owner_tag(self.ns, a['pool'])},
                                       "count": a["count"], "shutdown": a["shutdown"]})["reclaimed"]
            label += f"x{len(got)}" + ("(shutdown)" if a["shutdown"] else "")
        elif ev.kind == "delete_mid_launch":
            pool = a["pool"]
            if pool in self.deleted_at:
                return
            emu.post("fault", {"action": "RunInstances", "invisibleSeconds": a["invisible"], "times": 1})
            before = {i["InstanceId"] for i in emu.get("instances")}
            if emu.post("reclaim", {"tag": {"Key": TAG_KEY, "Value": owner_tag(self.ns, pool)}, "count": 1})["reclaimed"] == []:
                obj = self.pool_obj(pool)
                hi = obj["spec"].get("maximum", 0)
                at = time.time()
                self.kube.kubectl("-n", self.ns, "scale", "sp", pool, f"--replicas={hi}")
                self.record_spec(pool, self.pool_obj(pool), at)
            deadline = time.time() + 8
            seen = False
            while time.time() < deadline and not seen:
                self.supervise()
                seen = any(i["InstanceId"] not in before and {"Key": TAG_KEY, "Value": owner_tag(self.ns, pool)} in i["Tags"]
                           for i in emu.get("instances"))
                time.sleep(0.3)
            at = time.time()
            self.kube.kubectl("-n", self.ns, "delete", "sp", pool, "--wait=false")
            self.deleted_at[pool] = at
            self.record_spec(pool, None, at, deleted=True)
            label += "(launch seen)" if seen else "(no launch seen)"
        elif ev.kind == "leader_pause":
            ctl = self.leader_controller()
            if not ctl:
                return self.log(f"fault {label} skipped: no leader running")
            os.kill(ctl.proc.pid, signal.SIGSTOP)
            ctl.stopped = True
            timers.append((time.time() + a["hold"], ("cont", ctl)))
        elif ev.kind == "apiserver_restart":
            if not self.kube.restart_apiserver(self.log):
                return self.log(f"fault {label} skipped: another schedule restarted the apiserver lately")
        elif ev.kind == "restart_mid_launch":
            label += self.restart_mid_launch(a)
        elif ev.kind == "cred_rotation":
            old = self.rotate()
            self.schedule_revoke(old, a["overlap"], timers)
            for k in range(1, int(a["window"] // a["period"]) + 1):
                timers.append((time.time() + k * a["period"], ("rotate", a["overlap"])))
            label += f"(every {a['period']}s for {a['window']}s)"
        elif ev.kind == "lagging_watch":
            for ctl in self.controllers:
                if ctl.proxy:
                    ctl.proxy.delay(a["delay"])
                    ctl.proxy.replay(a["replays"])
            now = time.time()
            timers += [(now + c, ("watch_cut",)) for c in a["cuts"]]
            timers.append((now + a["window"], ("watch_end",)))
            label += f"(delay {a['delay']}s, {len(a['cuts'])} cut(s), {a['replays']} replay(s), {a['window']}s)"
        elif ev.kind == "leader_cutoff":
            label += self.leader_cutoff(a, timers)
        elif ev.kind == "notice":
            label += self.notice(a)
        elif ev.kind in ISSUE27_KINDS:
            label += self.issue27(ev.kind, a, timers)
        elif ev.kind == "lease_delete":
            result = self.kube.kubectl("-n", self.ns, "delete", "lease", "spotpool", "--wait=false", check=False)
            if result.returncode != 0:
                return self.log(f"fault {label} skipped: {result.stderr.strip()[:200]}")
            self.count("lease deletions")
        self.applied.append(label)
        self.log(f"fault: {label} {a}")

    # -- the faults of issue 27: a Node's word is a claim ------------------------------------
    def victim(self, a: dict) -> tuple[str, dict] | None:
        """A running instance of the event's pool (its drawn index) that has a Node."""
        if a["pool"] in self.deleted_at:
            return None
        live = self.owned_live(a["pool"], states=("RUNNING",))
        for k in range(len(live)):
            instance_id = live[(a["index"] + k) % len(live)]
            inc = self.ensure_node(instance_id)
            if inc:
                return instance_id, inc
        return None

    def forged(self, pool: str, instance_id: str, deadline: float, what: str) -> None:
        """Records a forged notice: it may doom the instance (for at most DOOM_MAX_S) but
        no reclaim follows, and the schedule does not wait for its deadline."""
        self.notices.append({"pool": pool, "id": instance_id, "t": time.time(), "deadline": deadline,
                             "reclaimed": False, "channel": what, "forged": True})
        self.count(f"forged notices ({what})")

    def issue27(self, kind: str, a: dict, timers: list) -> str:
        now = time.time()
        if kind == "fake_notices":
            made = 0
            for k in range(a["count"]):
                fake = "ins-" + hashlib.sha256(f"{self.seed}-{k}".encode()).hexdigest()[:8]
                made += self.create_spotnotice(f"fake-{k}", fake, rfc3339(now + 30 + 20 * (k % 10))) == 201
            self.count("SpotNotices for made-up IDs", made)
            return f"({made} SpotNotices for made-up IDs)"
        if kind == "region_change":
            if a["pool"] in self.deleted_at:
                return "(pool deleted)"
            patch = {"spec": {"region": a["region"], "availabilityZone": a["region"] + "-1"}}
            result = self.kube.kubectl("-n", self.ns, "patch", "sp", a["pool"], "--type", "merge", "-p",
                                       json.dumps(patch), check=False)
            if result.returncode != 0:
                self.count("region changes refused")
                self.log(f"region change refused: {result.stderr.strip()[:300]}")
                return "(refused)"
            self.count("region changes applied")
            return "(applied)"
        if kind == "account_change":
            other = (f"AKIDspotpoolOtherAccount{self.seed:05d}", f"FaultKey{self.seed}z{self.secret_nonce}otherNeverLog")
            self.emu.post("credentials", {"secretId": other[0], "secretKey": other[1], "account": "other"})
            self.secret_swapped = True
            self.write_secret(other)
            timers.append((now + a["window"], ("account_back",)))
            self.count("Secrets swapped to another account")
            return f"({a['window']} s)"
        got = self.victim(a)
        if not got:
            return "(skipped: no running instance with a Node)"
        instance_id, inc = got
        if kind == "node_delete_fail":
            for ctl in self.controllers:
                if ctl.proxy:
                    ctl.proxy.fail_node_deletes(a["times"], a["status"])
            self.emu.post("reclaim", {"instanceIds": [instance_id]})
            self.count("Node deletions made to fail", a["times"])
            return f"({instance_id} reclaimed, its Node's next {a['times']} deletion(s) answered {a['status']})"
        if kind == "node_reuse":
            return self.node_reuse(a, instance_id, inc, timers)
        if kind == "forged_label":
            n = sum(1 for i in self.incarnations if i["instance"] is None)
            # Named to sort first (a relisting controller sees it before the real Node),
            # with an address no instance has.
            forger = self.register_node(None, f"10.250.{self.seed % 250}.{n + 1}", name=f"a{self.seed}-cp{n}",
                                        labels={NODE_LABEL: instance_id})
            if not forger:
                return "(skipped: name taken)"
            forger["claims"] = instance_id
            self.count("Nodes claiming another instance")
            if a["notice"]:
                deadline = int(now + a["ahead"]) + 1.0
                self.node_condition(forger["name"], True, "reclaim at " + rfc3339(deadline))
                self.forged(a["pool"], instance_id, deadline, "forged label")
                return f"({forger['name']} claims {instance_id}, reclaim {a['ahead']:.0f} s ahead)"
            # No notice: the claimed instance goes, and its Node is to be deleted, not the claimant.
            self.forged(a["pool"], instance_id, now, "forged label, no notice")
            self.later(8, self.emu.post, "reclaim", {"instanceIds": [instance_id]})
            return f"({forger['name']} claims {instance_id}, which is reclaimed 8 s later)"
        if kind == "stale_notice":
            # The agent reported a reclaim, was down when it was withdrawn: the condition stays
            # True, its deadline long past, and the instance runs on.
            since, deadline = now - a["age"], now - a["age"] + 120
            self.node_condition(inc["name"], True, "reclaim at " + rfc3339(deadline), since=since)
            self.forged(a["pool"], instance_id, deadline, "stale")
            return f"({instance_id}, reported {a['age']:.0f} s ago)"
        if kind == "far_deadline":
            deadline = now + a["years"] * 365.25 * 86400
            text = rfc3339(deadline)
        elif kind == "past_deadline":
            deadline, text = 946684800.0, "2000-01-01T00:00:00Z"
        else:  # garbage_deadline
            deadline = int(now + a["ahead"]) + 1.0
            text = {"unparseable": "soon", "fractional": rfc3339(deadline)[:-1] + ".5Z",
                    "pre1970": "1969-12-31T23:59:59Z", "junk": rfc3339(deadline) + "junk"}[a["form"]]
        if a["channel"] == "spotnotice":
            status = self.create_spotnotice(f"{instance_id}-{kind.replace('_', '-')}", instance_id, text)
            if status != 201:
                self.count("forged SpotNotices refused by the CRD")
                return f"({instance_id}: SpotNotice at {text} refused, HTTP {status})"
        else:
            self.node_condition(inc["name"], True, "reclaim at " + text)
        self.forged(a["pool"], instance_id, deadline, kind)
        return f"({instance_id}, reclaim at {text})"

    def node_reuse(self, a: dict, instance_id: str, inc: dict, timers: list) -> str:
        """A Node deleted and registered again under its name (a new UID) while the
        controller runs: by the same instance ("same"), or, once the instance is
        reclaimed, by another machine that got the name (TKE names Nodes by IP) while
        the controller's watch lags ("other")."""
        owner, ip = instance_id, inc["ip"]
        if a["variant"] == "other":
            owner = self.emu.post("instances", {"region": REGION, "zone": ZONE, "instanceType": ITYPE})["instanceIds"][0]
            self.foreign.append(owner)
            ip = self.instance(owner)["PrivateIpAddresses"][0]
            for ctl in self.controllers:
                if ctl.proxy:
                    ctl.proxy.delay(a["lag"])
            timers.append((time.time() + a["lag"] + 1, ("watch_delay_end",)))
            self.emu.post("reclaim", {"instanceIds": [instance_id]})
        status, _ = self.kube.request("DELETE", f"/api/v1/nodes/{inc['name']}")
        inc["deleted"] = time.time()
        with self.node_lock:
            if self.node_of.get(instance_id) is inc:
                del self.node_of[instance_id]
        if status != 200 or not self.register_node(owner, ip, name=inc["name"]):
            return f"(skipped: Node {inc['name']} not re-registered, HTTP {status})"
        self.count("Nodes re-registered under their name" if owner == instance_id
                   else "Nodes re-registered under a reused name")
        return f"({inc['name']} of {instance_id} registered again" + \
            (")" if owner == instance_id else f" for {owner}, {instance_id} reclaimed)")

    # -- the faults of issue 19 ------------------------------------------------------------
    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def wait_leader(self, bound: float = 10) -> Controller | None:
        """The leader, waiting up to `bound` s for one (after a kill or a pause)."""
        deadline = time.time() + bound
        while not _stopping.is_set():
            ctl = self.leader_controller()
            if ctl or time.time() > deadline:
                return ctl
            self.supervise()
            time.sleep(0.3)
        return None

    def restart_mid_launch(self, a: dict) -> str:
        """Kills the leader as RunInstances answers, while the launch's first instance stays
        out of tag listings for longer than the launch grace; makes the pool launch."""
        pool = a["pool"]
        ctl = self.wait_leader()
        if pool in self.deleted_at or not ctl:
            return "(skipped)"
        ctl.__dict__["next_delay"] = a["restart_after"]
        self.emu.post("fault", {"action": "RunInstances", "tagIndexLagOneSeconds": a["lag"], "times": 1})
        self.emu.post("killhook", {"action": "RunInstances", "when": "after", "pid": ctl.proc.pid,
                                   "comm": os.path.basename(self.c.bin)[:15], "times": 1})
        # A launch of two instances when the pool can have two (a partial view is possible then).
        obj = self.pool_obj(pool)
        lo, hi, replicas = obj["spec"].get("minimum", 0), obj["spec"].get("maximum", 0), obj["spec"].get("replicas")
        target = max(lo, min(hi, replicas)) if replicas is not None else lo
        if target < min(2, hi):
            at = time.time()
            self.kube.kubectl("-n", self.ns, "scale", "sp", pool, f"--replicas={hi}")
            self.record_spec(pool, self.pool_obj(pool), at)
            return f"(scaled to {hi})"
        got = self.emu.post("reclaim", {"tag": {"Key": TAG_KEY, "Value": owner_tag(self.ns, pool)},
                                        "count": min(2, max(1, target))})["reclaimed"]
        return f"(reclaimed {len(got)})"

    def rotate(self) -> tuple[str, str]:
        """New credentials for the Secret and the inline specs; answers the old ones."""
        self.rotations += 1
        n = self.rotations
        old = self.cred
        self.cred = (f"AKIDspotpoolRotated{self.seed:05d}n{n:04d}", f"FaultKey{self.seed}z{self.secret_nonce}r{n}NeverLog")
        self.emu.post("credentials", {"secretId": self.cred[0], "secretKey": self.cred[1]})
        if any(p.creds in ("secret", "inline") for p in self.plan.pools) and not self.secret_swapped:
            self.write_secret(self.cred)
        for pool in self.plan.pools:
            if pool.creds == "inline" and pool.name not in self.inline_moved and pool.name not in self.deleted_at:
                # The CRD refuses another inline SecretId (docs/migration.md): inline keys
                # are rotated by moving them into the Secret, once.
                self.kube.kubectl("-n", self.ns, "patch", "sp", pool.name, "--type", "merge", "-p",
                                  json.dumps({"spec": {"credentialsSecretRef": {"name": "cvm-creds"},
                                                       "secretId": None, "secretKey": None}}),
                                  check=False)
                self.inline_moved.add(pool.name)
        self.count("credential rotations")
        self.log(f"credentials rotated: {old[0]} -> {self.cred[0]}")
        return old

    def write_secret(self, cred: tuple[str, str]) -> None:
        self.kube.kubectl("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cvm-creds", "namespace": self.ns},
            "stringData": {"secretId": cred[0], "secretKey": cred[1]}}))

    def schedule_revoke(self, old: tuple[str, str], overlap: float, timers: list) -> None:
        if old[0] != SECRET_ID:  # the controller's environment keeps SECRET_ID
            timers.append((time.time() + overlap, ("revoke", old[0])))

    def journal_since(self, offset: int) -> tuple[list[dict], int]:
        with open(self.emu.journal_path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
        cut = data.rfind(b"\n") + 1
        entries = []
        for line in data[:cut].splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                pass
        return entries, offset + cut

    def leader_cutoff(self, a: dict, timers: list) -> str:
        """Slow (and maybe throttled) cloud answers; once a call of the leader is being
        answered slowly, its apiserver traffic is blackholed for `hold` seconds."""
        ctl = self.wait_leader()
        if not ctl or not ctl.proxy:
            return "(skipped: no leader)"
        offset = os.path.getsize(self.emu.journal_path)
        self.emu.post("fault", {"action": "RunInstances", "latencyMs": a["latency"], "times": 1})
        self.emu.post("fault", {"action": "TerminateInstances", "latencyMs": a["latency"], "times": 1})
        self.emu.post("fault", {"action": "DescribeInstances", "latencyMs": a["latency"], "times": 2})
        if a["throttle"]:
            for action in ("RunInstances", "TerminateInstances"):
                self.emu.post("throttle", {"action": action, "perSecond": 0.5})
            timers.append((time.time() + a["hold"], ("unthrottle",)))
        if a["pool"] not in self.deleted_at:  # something to launch
            self.emu.post("reclaim", {"tag": {"Key": TAG_KEY, "Value": owner_tag(self.ns, a["pool"])}, "count": 1})
        deadline, during = time.time() + 8, None
        while time.time() < deadline and not _stopping.is_set():
            entries, offset = self.journal_since(offset)
            slow = [e for e in entries if "latencyMs" in (e.get("faults") or [])]
            mutation = [e for e in slow if e["action"] != "DescribeInstances"]
            if mutation or (slow and time.time() > deadline - 4):
                during = (mutation or slow)[0]["action"]
                break
            self.supervise()
            time.sleep(0.1)
        if not (ctl.proc and ctl.proc.poll() is None):
            return "(skipped: the leader exited)"
        ctl.proxy.blackhole(True)
        cut = [ctl.proc.pid, time.time(), None]
        self.cutoffs.append(cut)
        self.count("leader cut-offs")
        if during:
            self.count(f"leader cut-offs during a slow {during[:-9]}")
        timers.append((time.time() + a["hold"], ("cutoff_end", ctl, cut, None)))
        # Once its Lease has expired, something the old leader would act on: a SHUTDOWN
        # instance to clean up (terminations are not fenced by the launch ledger).
        timers.append((time.time() + LEASE_DURATION_S + 1.5, ("shutdown_one",)))
        self.log(f"controller {ctl.index} (leader, pid {ctl.proc.pid}) cut off from the apiserver"
                 + (f" while its {during} is answered slowly" if during else " (no slow call seen)"))
        return f"({'during ' + during[:-9] if during else 'no call seen'}, {a['hold']}s)"

    def fire_timer(self, what, final: bool = False) -> None:
        if what[0] == "account_back":
            self.secret_swapped = False
            self.write_secret(self.cred)
            self.swapped_back_at = time.time()
            self.log("the Secret holds this account's credentials again")
        elif what[0] == "watch_delay_end":
            for ctl in self.controllers:
                if ctl.proxy:
                    ctl.proxy.delay(0)
        elif what[0] == "rotate":
            self.schedule_revoke(self.rotate(), what[1], self.timers)
        elif what[0] == "revoke":
            self.emu.post("credentials", {"secretId": what[1], "remove": True})
            self.count("credentials revoked")
            self.log(f"credentials revoked: {what[1]}")
        elif what[0] == "watch_cut":
            for ctl in self.controllers:
                if ctl.proxy:
                    ctl.proxy.cut()
        elif what[0] == "watch_end":
            for ctl in self.controllers:
                if ctl.proxy:
                    ctl.proxy.delay(0)
                    ctl.proxy.replays_left = 0
        elif what[0] == "shutdown_one":
            for pool in self.plan.pools:
                if pool.name not in self.deleted_at and self.emu.post("reclaim", {
                        "tag": {"Key": TAG_KEY, "Value": owner_tag(self.ns, pool.name)}, "count": 1,
                        "shutdown": True})["reclaimed"]:
                    self.count("instances shut down while the leader was cut off")
                    self.log(f"one instance of {short(pool.name)} shut down while the leader is cut off")
                    break
        elif what[0] == "unthrottle":
            for action in ("RunInstances", "TerminateInstances"):
                self.emu.post("throttle", {"action": action, "perSecond": None})
        elif what[0] == "cutoff_end":
            ctl = what[1]
            lease = self.kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{self.ns}/leases/spotpool")
            holder = ((lease or {}).get("spec") or {}).get("holderIdentity") or ""
            holder_pid = holder.rsplit("_", 1)[-1]
            cut, until = what[2], what[3] or time.time() + 10
            standby_up = any(c is not ctl and c.proc and c.proc.poll() is None and not c.stopped
                             for c in self.controllers)
            if holder_pid != str(cut[0]) and holder_pid in self.started_pids:
                self.count("standby took over")
            elif standby_up and time.time() < until and not final:
                # The standby (paused or restarted meanwhile) times the Lease from when it
                # first saw it: up to 10 s more before the old leader is reconnected.
                self.timers.append((time.time() + 1, ("cutoff_end", ctl, cut, until)))
                return
            self.log(f"controller {ctl.index} reconnected to the apiserver; Lease holder {holder or '(none)'}")
            cut[2] = time.time()
            if ctl.proxy:
                ctl.proxy.blackhole(False)
        elif what == "tag_index_end":
            self.emu.post("config", self.plan.background_index or
                          {"tagIndexLagSeconds": 0, "tagIndexDropProbability": 0})
        elif what[0] == "throttle_end":
            self.emu.post("throttle", {"action": what[1], "perSecond": None})
        elif what[0] == "cont":
            ctl = what[1]
            if ctl.proc and ctl.proc.poll() is None:
                os.kill(ctl.proc.pid, signal.SIGCONT)
            ctl.stopped = False

    def fault_phase(self) -> None:
        start = time.time()
        events = list(self.plan.events)
        timers: list = []
        self.timers = timers
        end = start + self.plan.duration
        next_snapshot = start + 5
        while time.time() < end and not _stopping.is_set():
            now = time.time()
            while events and start + events[0].t <= now:
                ev = events.pop(0)
                try:
                    self.apply(ev, timers)
                except Exception as err:  # a fault that could not be applied is logged, not fatal
                    self.log(f"fault {ev.kind} not applied: {err}")
            for timer in [t for t in timers if t[0] <= now]:
                timers.remove(timer)
                try:
                    self.fire_timer(timer[1])
                except Exception as err:
                    self.log(f"timer {timer[1]} failed: {err}")
            self.supervise()
            if now >= next_snapshot:  # statuses written under faults carry error messages
                self.snapshot_statuses()
                next_snapshot = now + 5
            time.sleep(0.2)
        # Faults off: what ends a fault fires now; no further rotation or cut; a revocation
        # waits for the end of its overlap.
        for due, what in sorted(timers, key=lambda t: t[0]):
            if what[0] in ("rotate", "watch_cut", "shutdown_one"):
                continue
            if what[0] == "revoke" and due > time.time():
                time.sleep(due - time.time())
            self.fire_timer(what, final=True)
        timers.clear()

    def faults_off(self) -> None:
        emu = self.emu
        emu.post("fault", {"clear": True})
        emu.post("killhook", {"clear": True})
        emu.post("throttle", {"action": "*", "perSecond": None})
        emu.post("config", {"tagIndexLagSeconds": 0, "tagIndexDropProbability": 0})
        for cut in self.cutoffs:
            cut[2] = cut[2] or time.time()
        for ctl in self.controllers:
            if ctl.proxy:
                ctl.proxy.delay(0)
                ctl.proxy.replays_left = 0
                ctl.proxy.blackhole(False)
                with ctl.proxy.lock:
                    ctl.proxy.node_delete_failures.clear()
            if ctl.proc and ctl.proc.poll() is None:
                os.kill(ctl.proc.pid, signal.SIGCONT)
                ctl.stopped = False
        # Exactly one controller from now on.
        for ctl in self.controllers[1:]:
            ctl.enabled = False
            self.kill_controller(ctl, signal.SIGTERM)
        first = self.controllers[0]
        if not (first.proc and first.proc.poll() is None):
            self.supervise()
            if not (first.proc and first.proc.poll() is None):
                self.start_controller(first)
        self.faults_off_at = time.time()
        self.log("faults off")

    # -- checks ---------------------------------------------------------------------
    def convergence_problems(self) -> list[str]:
        problems = []
        for pool in self.plan.pools:
            if pool.name in self.deleted_at:
                continue
            obj = self.pool_obj(pool.name)
            if obj is None:
                problems.append(f"{pool.name}: object missing")
                continue
            spec, status = obj.get("spec", {}), obj.get("status") or {}
            if account_hold(status) and pool.name in self.false_holds:
                problems.append(f"{pool.name}: held by AccountChanged without an instance in another account "
                                f"({self.false_holds[pool.name]})")
                continue
            lo, hi, replicas = spec.get("minimum", 0), spec.get("maximum", 0), spec.get("replicas")
            live = self.emu.stats(self.ns, pool.name)["live"]
            # An instance a notice dooms (for at most DOOM_MAX_S) may be kept, drained,
            # beside its replacement, out of the size: the cloud ends it, or it counts again.
            doomed = 0
            if any(r["pool"] == pool.name for r in self.notices):
                now, running = time.time(), set(self.owned_live(pool.name))
                doomed = len({r["id"] for r in self.notices if r["pool"] == pool.name and r["id"] in running
                              and now <= r["t"] + DOOM_MAX_S})
            ok = any((n == max(lo, min(hi, replicas)) if replicas is not None else lo <= n <= hi)
                     and status.get("size") == n for n in range(live - doomed, live + 1))
            if not ok:
                problems.append(f"{pool.name}: spec {lo}..{hi} replicas={replicas}, live {live}, "
                                f"status.size={status.get('size')}, launch={json.dumps(status.get('launch'))}")
        return problems

    def settle_account_holds(self) -> None:
        """Plays the operator on each pool held by AccountChanged, as
        docs/troubleshooting.md#accountchanged says ("Abandon the instances knowingly"):
        a hold is right only while an instance the pool records (by its tag or the IDs in
        its status) lives in another account than its credentials now name (CRED_ACCOUNT:
        after faults off every credential the campaign hands out is of that account). If
        so, the hold is checked (`account-hold`), those instances are terminated in their
        account as in the console, and status.accountFingerprint removed: the pool must
        then take the account, take them for gone and refill (converged, deleted). A hold
        without such an instance is left in place and reported by `converged`."""
        for pool in self.plan.pools:
            if pool.name in self.deleted_at or pool.name in self.abandoned:
                continue
            obj = self.pool_obj(pool.name)
            status = (obj or {}).get("status") or {}
            cond = account_hold(status)
            if not cond:
                continue
            tag = owner_tag(self.ns, pool.name)
            recorded = {i.get("instanceId") for i in status.get("instances") or []}
            elsewhere = [i for i in self.emu.get("instances")
                         if i.get("account") != CRED_ACCOUNT and i["InstanceState"] != "TERMINATING"
                         and (i["InstanceId"] in recorded
                              or any(t["Key"] == TAG_KEY and t["Value"] == tag for t in i["Tags"]))]
            if not elsewhere:
                self.false_holds[pool.name] = (f"recorded {sorted(x for x in recorded if x)}, none live outside "
                                               f"account {CRED_ACCOUNT}; since {cond.get('lastTransitionTime')}")
                continue
            self.false_holds.pop(pool.name, None)
            self.check_account_hold(pool.name, cond)
            by_account: dict[str, list[str]] = {}
            for i in elsewhere:
                by_account.setdefault(i["account"], []).append(i["InstanceId"])
            for account, ids in sorted(by_account.items()):
                self.emu.post("terminate", {"instanceIds": ids, "account": account})
            self.abandoned[pool.name] = [i["InstanceId"] for i in elsewhere]
            self.kube.kubectl("-n", self.ns, "patch", "sp", pool.name, "--subresource=status", "--type=merge",
                              "-p", json.dumps({"status": {"accountFingerprint": None}}))
            self.count("AccountChanged holds settled by the operator")
            self.log(f"{short(pool.name)} held by AccountChanged: terminated "
                     + ", ".join(f"{i['InstanceId']} in account {i['account']}" for i in elsewhere)
                     + " and removed status.accountFingerprint")

    def check_account_hold(self, pool: str, cond: dict) -> None:
        """account-hold: while the pool is held (from the condition's lastTransitionTime,
        whole seconds, or the Secret's swap back if later: Degraded may have been True for
        another reason before; + HOLD_SLACK_S for a call already in flight), none of its instances
        was launched (a RunInstances with its ClientToken that created instances) or
        terminated (a TerminateInstances naming one it launched); the condition's message
        names no credential."""
        since = max(calendar.timegm(time.strptime(cond["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ")),
                    self.swapped_back_at) + HOLD_SLACK_S
        prefix = self.token_prefix(pool)
        journal = self.journal()
        launched = {i for e in journal if e.get("action") == "RunInstances"
                    and (e.get("clientToken") or "").startswith(prefix) for i in e.get("instanceIds") or []}
        held = [e for e in journal if e.get("time", 0) >= since and e.get("requestId") and not e.get("error")]
        acted = [f"{e['action']} {clock(e['time'])} {e.get('instanceIds')} by {e.get('secretId')}" for e in held
                 if (e.get("action") == "RunInstances" and e.get("instanceIds") and not e.get("replay")
                     and (e.get("clientToken") or "").startswith(prefix))
                 or (e.get("action") == "TerminateInstances" and launched & set(e.get("instanceIds") or []))]
        message = cond.get("message") or ""
        named = [what for what, text in (("a SecretId", "AKID"), ("a secret key", self.secret_nonce))
                 if text in message]
        if acted or named:
            self.violate("account-hold", f"{pool}: held by AccountChanged since {clock(since - HOLD_SLACK_S)}, yet "
                         + "; ".join((["its instances launched or terminated"] if acted else [])
                                     + [f"the message names {what}" for what in named]),
                         acted[:5] + [f"message: {message[:300]}"])

    def check_convergence(self) -> None:
        deadline = self.faults_off_at + CONVERGE_S
        problems = ["not checked"]
        while time.time() < deadline and not _stopping.is_set():
            self.supervise()
            self.settle_account_holds()
            problems = self.convergence_problems()
            if not problems:
                self.converged_after = time.time() - self.faults_off_at
                return
            time.sleep(1)
        self.violate("converged", f"not converged {CONVERGE_S} s after faults off", problems + self.ctl_tail())

    def check_mid_deletions(self) -> None:
        for pool, when in self.deleted_at.items():
            deadline = max(when, self.faults_off_at) + DELETE_S
            while self.pool_obj(pool) is not None and time.time() < deadline and not _stopping.is_set():
                self.supervise()
                time.sleep(1)
            obj = self.pool_obj(pool)
            if obj is not None:
                self.stuck.add(pool)
                self.violate("deleted", f"{pool} (deleted during the faults) still there {DELETE_S} s after faults off",
                             [f"finalizers={obj['metadata'].get('finalizers')} status={json.dumps(obj.get('status'))[:600]}"]
                             + self.ctl_tail())

    def delete_all(self) -> None:
        now = time.time()
        self.kube.kubectl("-n", self.ns, "delete", "sp", "--all", "--wait=false")
        for pool in self.plan.pools:
            if pool.name not in self.deleted_at:
                self.deleted_at[pool.name] = now
                self.record_spec(pool.name, None, now, deleted=True)
        deadline = now + DELETE_S
        left = []
        while time.time() < deadline and not _stopping.is_set():
            self.supervise()
            # A pool already reported stuck (deleted during the faults) is not waited for again.
            left = [o for o in (self.kube.get(self.sp_path()) or {}).get("items", [])
                    if o["metadata"]["name"] not in self.stuck]
            if not left:
                break
            time.sleep(1)
        self.deleted_after = time.time() - now
        if left:
            self.violate("deleted", f"{len(left)} Spotpool(s) still there {DELETE_S} s after deletion",
                         [f"{o['metadata']['name']}: finalizers={o['metadata'].get('finalizers')} "
                          f"status={json.dumps(o.get('status'))[:600]}" for o in left] + self.ctl_tail())
        # Leaks: anything still tagged with a Delete-policy pool's identity.
        # (A pool still there, reported as stuck above, still owns its instances.)
        remaining = {o["metadata"]["name"] for o in (self.kube.get(self.sp_path()) or {}).get("items", [])}
        owned = {owner_tag(self.ns, p.name) for p in self.plan.pools if not p.retain and p.name not in remaining}
        # Instances the operator terminated in another account (settle_account_holds) are
        # theirs to watch go, not the controller's: they are not counted.
        abandoned = {i for ids in self.abandoned.values() for i in ids}
        deadline = time.time() + 10
        leaked = []
        while time.time() < deadline:
            leaked = [i for i in self.emu.get("instances") if i["InstanceId"] not in abandoned
                      and any(t["Key"] == TAG_KEY and t["Value"] in owned for t in i["Tags"])]
            if not leaked:
                break
            time.sleep(1)
        if leaked:
            self.violate("leak", f"{len(leaked)} owned instance(s) left after every pool was deleted",
                         [f"{i['InstanceId']} {i['InstanceState']} in {i['region']}, account {i.get('account')}, "
                          f"tag={[t['Value'] for t in i['Tags']]} "
                          f"created={i['CreatedTime']} seen={i.get('seen')} visible={i.get('visible')}" for i in leaked])

    def journal(self) -> list[dict]:
        entries = []
        with open(self.emu.journal_path) as handle:
            for line in handle:
                try:
                    entries.append(json.loads(line))
                except ValueError:
                    pass
        return entries

    def token_prefix(self, pool: str) -> str:
        ident = f"{self.uids[pool]}/{self.ns}/{pool}"
        return "spotpool-" + hashlib.sha256(ident.encode()).hexdigest()[:32] + "-"

    def target_at(self, entry: tuple) -> int:
        _, lo, hi, replicas, deleted = entry
        if deleted:
            return 0
        return max(lo, min(hi, replicas)) if replicas is not None else lo

    def check_invariants(self) -> None:
        journal = self.journal()
        runs = [e for e in journal if e.get("action") == "RunInstances" and e.get("requestId") and not e.get("dryRun")]
        self.count_evidence(journal)
        self.check_fenced(journal)
        gone: dict[str, float] = {}  # instance -> when it went (terminated or reclaimed)
        for e in journal:
            if ((e.get("action") == "TerminateInstances" and e.get("requestId") and not e.get("error"))
                    or e.get("action") in ("_reclaim", "_terminate")):
                for i in e.get("instanceIds") or []:
                    gone.setdefault(i, e["time"])
        self.check_nodes(journal, gone)
        self.check_doom_bound()
        for pool in self.plan.pools:
            log = self.spec_log[pool.name]
            stats = self.emu.stats(self.ns, pool.name, history=True)
            if len(pool.name) > 63:
                self.count("pools with 253-character names")
                self.count("instances launched by them", stats["launched"])
            highest = max(entry[2] for entry in log if not entry[4])
            maxes = [f"{time.strftime('%H:%M:%S', time.localtime(e[0]))} {'deleted' if e[4] else f'{e[1]}..{e[2]} r={e[3]}'}"
                     for e in log]
            noticed = [r for r in self.notices if r["pool"] == pool.name]
            over = [(t, live, self.doomed_at(pool.name, t, gone)) for t, live in stats["history"]
                    if live > highest] if noticed else []
            over = [(t, live, d) for t, live, d in over if live - d > highest]
            if over:
                self.violate("peak", f"{pool.name}: {over[0][1]} live at "
                             f"{time.strftime('%H:%M:%S', time.localtime(over[0][0]))} of which {over[0][2]} doomed, "
                             f"highest maximum ever set {highest}",
                             [f"spec history: {'; '.join(maxes)}",
                              "notices: " + "; ".join(f"{r['id']} at {time.strftime('%H:%M:%S', time.localtime(r['t']))}"
                                                      f" deadline {time.strftime('%H:%M:%S', time.localtime(r['deadline']))}"
                                                      for r in noticed),
                              *self.launch_evidence(runs, pool.name)])
            elif stats["maxLive"] > highest and not noticed:
                peak = max(stats["history"], key=lambda p: p[1]) if stats["history"] else None
                self.violate("peak", f"{pool.name}: {stats['maxLive']} live at once, highest maximum ever set {highest}",
                             [f"spec history: {'; '.join(maxes)}",
                              f"peak at {time.strftime('%H:%M:%S', time.localtime(peak[0])) if peak else '?'}",
                              *self.launch_evidence(runs, pool.name)])
            # peak-now: fresh launches judged against the maximum in effect just before them.
            prefix = self.token_prefix(pool.name)
            for r in noticed:
                if any(e["time"] >= r["t"] and e["time"] <= r["deadline"] and e.get("instanceIds")
                       and not e.get("replay") and not e.get("error")
                       and (e.get("clientToken") or "").startswith(prefix) for e in runs):
                    self.count("launches of the pool between a notice and its deadline")
            first_seen: dict[str, float] = {}
            for e in runs:
                token = e.get("clientToken") or ""
                if token.startswith(prefix):
                    first_seen.setdefault(token, e["time"])
            history = stats["history"]
            for e in runs:
                token = e.get("clientToken") or ""
                if not token.startswith(prefix) or e.get("replay") or not e.get("instanceIds") or e.get("error"):
                    continue
                if first_seen[token] != e["time"]:
                    continue
                t = e["time"]
                # The spec in effect at t is the last record at or before t (records carry
                # the time just before the edit was sent); any maximum set in the 10 s
                # before t is allowed too (the controller may have read it just before).
                before = [entry for entry in log if entry[0] <= t - 10]
                allowed = max([before[-1][2] if before and not before[-1][4] else 0]
                              + [entry[2] for entry in log if not entry[4] and t - 10 < entry[0] <= t])
                # The live count this launch made: up to 0.5 s after it, but not past the
                # pool's next launch that created instances (judged on its own; seed 35
                # once charged a launch with the next one, made after a rise of maximum).
                later = [e2["time"] for e2 in runs if (e2.get("clientToken") or "").startswith(prefix)
                         and e2.get("instanceIds") and not e2.get("replay") and not e2.get("error")
                         and e2["time"] > t]
                end = min([t + 0.5] + [x - 0.001 for x in later])
                after = [p[1] - self.doomed_at(pool.name, p[0], gone) for p in history if t - 0.01 <= p[0] <= end]
                live_after = max(after) if after else None
                if live_after is not None and live_after > allowed:
                    self.violate("peak-now", f"{pool.name}: fresh launch {token} of {len(e['instanceIds'])} at "
                                 f"{time.strftime('%H:%M:%S', time.localtime(t))} brought live to {live_after}, "
                                 f"maximum in effect {allowed}",
                                 [f"spec history: {'; '.join(maxes)}", *self.launch_evidence(runs, pool.name)])
                    break
            # launches <= upward variation of the target + reclaimed + LAUNCH_FAILED
            upvar, last = 0, 0
            for entry in log:
                target = self.target_at(entry)
                upvar += max(0, target - last)
                last = target
            failed = sum(len(e.get("instanceIds") or []) for e in runs
                         if "launchFail" in (e.get("faults") or []) and (e.get("clientToken") or "").startswith(prefix))
            # A noticed instance the emulator did not reclaim (terminated at its deadline, or
            # not at all) may have been replaced too.
            unreclaimed = len({r["id"] for r in noticed} - {r["id"] for r in noticed if r["reclaimed"]})
            abandoned = len(self.abandoned.get(pool.name, []))  # by the operator, in another account
            bound = upvar + stats["reclaimed"] + failed + unreclaimed + abandoned
            if stats["launched"] > bound:
                self.violate("launches", f"{pool.name}: launched {stats['launched']} instance(s), bound {bound} "
                             f"(target rises {upvar} + reclaimed {stats['reclaimed']} + LAUNCH_FAILED {failed}"
                             f" + noticed, not reclaimed {unreclaimed} + abandoned in another account {abandoned})",
                             [f"spec history: {'; '.join(maxes)}", *self.launch_evidence(runs, pool.name)])
        # foreign instances
        terminated = [(e, i) for e in journal if e.get("action") == "TerminateInstances" and e.get("requestId")
                      and not e.get("error")
                      for i in e.get("instanceIds") or []]
        touched = sorted({i for _, i in terminated if i in self.foreign})
        if touched:
            self.violate("foreign", f"foreign instance(s) terminated: {', '.join(touched)}",
                         [json.dumps(e) for e, i in terminated if i in touched][:5])
        launched_ids = {i for e in runs for i in e.get("instanceIds") or []}
        stray = sorted({i for _, i in terminated if i not in launched_ids and i not in self.foreign})
        if stray:
            self.violate("foreign", f"terminated instance(s) no controller launched: {', '.join(stray)}")
        present = {i["InstanceId"]: i["InstanceState"] for i in self.emu.get("instances")}
        gone = [f"{i}={present.get(i, 'gone')}" for i in self.foreign if present.get(i) != "RUNNING"]
        if gone:
            self.violate("foreign", f"foreign instance(s) no longer RUNNING: {', '.join(gone)}")
        self.check_protocol(journal)

    def notices_of(self, instance_id: str) -> str:
        return "; ".join(f"{r['channel']} notice published {clock(r['t'])}, deadline "
                         f"{rfc3339(r['deadline']) if r['deadline'] > 4e9 or r['deadline'] < 1e9 else clock(r['deadline'])}"
                         for r in self.notices if r["id"] == instance_id) or "no notice"

    def check_nodes(self, journal: list[dict], gone: dict[str, float]) -> None:
        """The Node invariants of issue 27, judged by the pairing of Nodes to instances the
        campaign's kubelets made (not by labels), what the proxies saw the controllers do
        (Node deletions and their answers, evictions asked) and the emulator's journal:
          node-deleted  no Node deleted while its instance runs, nor a Node of no instance;
          evict         no instance terminated by the controller while a pod placed on its
                        Node (POD_MARGIN_S before) had not been asked to evict (or gone);
          node-left     the Node of an instance gone is deleted within NODE_LEFT_S (the check
                        waits that long after the instance went if need be); one that
                        declares no instance (style "ip"), within NODE_LEFT_S of its Ready
                        Unknown (node_lifecycle)."""
        if not self.incarnations:
            return
        observed = sorted((o for ctl in self.controllers if ctl.proxy for o in ctl.proxy.observed),
                          key=lambda o: o["t"])
        state = {i["InstanceId"]: i["InstanceState"] for i in self.emu.get("instances")}
        dead: dict[str, float] = {}  # reclaimed or shut down: nothing to evict from it after that
        for e in journal:
            if e.get("action") in ("_reclaim", "_reclaimed", "_terminate"):
                for i in e.get("instanceIds") or []:
                    dead.setdefault(i, e["time"])

        def fate(i: str) -> str:
            return f"gone at {clock(gone[i])}" if i in gone else f"{state.get(i, 'gone')} at the end"

        def node_text(inc: dict) -> str:
            before = [i for i in self.incarnations if i["name"] == inc["name"] and i["created"] < inc["created"]]
            again = (f", the name of {before[-1]['instance'] or 'a Node of no instance'}'s Node until "
                     f"{clock(before[-1]['deleted'] or 0)}" if before else "")
            return (f"{inc['name']} (uid {inc['uid'][:8]}, registered {clock(inc['created'])}, "
                    f"InternalIP {inc['ip']}{again})")

        for o in observed:
            if o["method"] != "DELETE" or not 200 <= o["status"] < 300:
                continue
            name = o["path"].rsplit("/", 1)[-1]
            inc = next((i for i in self.incarnations if i["uid"] == o.get("uid")), None) or next(
                (i for i in reversed(self.incarnations) if i["name"] == name and i["created"] < o["t"]), None)
            if inc is None:
                self.violate("node-deleted", f"the controller deleted Node {name} at {clock(o['t'])}, "
                             "a Node this schedule did not register")
            elif inc["instance"] is None:
                claimed = inc.get("claims", "?")
                self.violate("node-deleted", f"the controller deleted Node {node_text(inc)} at {clock(o['t'])}, "
                             f"a Node of no instance that claims {claimed} by its label ({claimed} {fate(claimed)})",
                             [f"{claimed}: {self.notices_of(claimed)}", *self.ctl_tail()])
            elif gone.get(inc["instance"], float("inf")) > o["t"] + 0.5:
                i = inc["instance"]
                self.violate("node-deleted", f"the controller deleted Node {node_text(inc)} of {i} at "
                             f"{clock(o['t'])} while {i} ran ({fate(i)})",
                             [f"{i}: {self.notices_of(i)}", *self.ctl_tail()])
        evicted: dict[str, float] = {}
        for o in observed:
            if o["method"] == "POST" and f"/namespaces/{self.ns}/pods/" in o["path"]:
                evicted.setdefault(o["path"].split("/pods/")[1].split("/")[0], o["t"])
        self.count("evictions asked", sum(1 for o in observed if o["method"] == "POST"))
        self.count("Nodes deleted by the controller",
                   sum(1 for o in observed if o["method"] == "DELETE" and 200 <= o["status"] < 300))
        for e in journal:
            if e.get("action") != "TerminateInstances" or not e.get("requestId") or e.get("error"):
                continue
            t = e["time"]
            for i in e.get("instanceIds") or []:
                if dead.get(i, float("inf")) < t:
                    continue
                left = [(inc, pod, placed) for inc in self.incarnations if inc["instance"] == i
                        for pod, placed in inc["pods"].items()
                        if placed <= t - POD_MARGIN_S and self.pods_gone.get(pod, float("inf")) > t
                        and evicted.get(pod, float("inf")) > t + 0.5]
                if left:
                    self.violate("evict", f"the controller terminated {i} at {clock(t)} while {len(left)} pod(s) on "
                                 f"its Node {left[0][0]['name']} had not been asked to evict: "
                                 + ", ".join(f"{pod} (placed {clock(placed)})" for _, pod, placed in left),
                                 [f"{i}: {self.notices_of(i)}",
                                  "evictions the controller asked on this schedule's Nodes: "
                                  + (", ".join(f"{p} at {clock(w)}" for p, w in sorted(evicted.items(),
                                                                                        key=lambda x: x[1])[:8])
                                     or "none"), *self.ctl_tail()])
        judged = [inc for inc in self.incarnations if inc["instance"] in gone and not inc["deleted"]
                  and inc["instance"] in self.recorded and inc["created"] <= gone[inc["instance"]] - 5]

        def due(inc: dict, now: float) -> float:
            """When inc is to be deleted by: NODE_LEFT_S after its instance went or, for a
            Node that declares no instance, after its Ready Unknown (waited for, bounded)."""
            if self.plan.node_style != "ip":
                return gone[inc["instance"]] + NODE_LEFT_S
            if inc.get("unknown"):
                return inc["unknown"] + NODE_LEFT_S
            return now + 1 if now < gone[inc["instance"]] + UNKNOWN_WAIT_S else now

        while True:  # until each Node is deleted or past its due time
            nodes = self.kube.get(f"/api/v1/nodes?labelSelector=faults-seed%3D{self.seed}") or {}
            present = {n["metadata"]["name"]: n["metadata"]["uid"] for n in nodes.get("items", [])}
            judged = [inc for inc in judged if present.get(inc["name"]) == inc["uid"]]
            now = time.time()
            due_at = max([due(inc, now) for inc in judged], default=0)
            if due_at <= now or _stopping.is_set():
                break
            time.sleep(min(1.0, due_at - now))
        observed = sorted((o for ctl in self.controllers if ctl.proxy for o in ctl.proxy.observed),
                          key=lambda o: o["t"])
        for inc in judged:
            i = inc["instance"]
            tries = [f"{clock(o['t'])} HTTP {o['status']}{' (injected)' if o.get('injected') else ''}"
                     for o in observed if o["method"] == "DELETE" and o["path"].endswith("/" + inc["name"])]
            unknown = ("" if self.plan.node_style != "ip" else f", Ready Unknown at {clock(inc['unknown'])}"
                       if inc.get("unknown") else ", never marked Ready Unknown by the campaign")
            self.violate("node-left", f"Node {node_text(inc)} of {i}, gone at {clock(gone[i])}{unknown}, still "
                         f"there {now - gone[i]:.0f} s later; the controller's deletions of it: "
                         + (", ".join(tries) or "none"))

    def check_doom_bound(self) -> None:
        """doom-bound: no instance counted as doomed (a reclaimAt in the pool's status) more
        than DOOM_MAX_S after its first notice was published, nor without a notice."""
        first = {}
        for r in self.notices:
            first[r["id"]] = min(first.get(r["id"], r["t"]), r["t"])
        for (pool, i), (seen, text) in sorted(self.doom_seen.items(), key=lambda x: x[1][0]):
            try:
                at = calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
            except ValueError:
                at = None
            if i not in first:
                self.violate("doom-bound", f"{short(pool)}: the status counted {i} doomed (reclaimAt {text}, seen "
                             f"{clock(seen)}) though no notice was published for it")
            elif at is None or at > first[i] + DOOM_MAX_S + 60:
                self.violate("doom-bound", f"{short(pool)}: the status counted {i} doomed until {text} (seen "
                             f"{clock(seen)}), more than {DOOM_MAX_S // 60} min after its notice was first "
                             f"published at {clock(first[i])}", [f"{i}: {self.notices_of(i)}"])

    def check_fenced(self, journal: list[dict]) -> None:
        """fenced: a leader cut off from the apiserver cannot renew its Lease, so it must
        stop acting before the Lease expires (docs/how-it-works.md, "Leader election").
        Its last renewal was before the cut, so a RunInstances or TerminateInstances of
        its (the User-Agent names the holder identity, which ends in the pid) reaching
        the emulator more than leaseDurationSeconds + 1 s after the cut, while still cut
        off, is a deposed leader acting. Calls refused by throttling did nothing and do
        not count."""
        for pid, cut_at, back_at in self.cutoffs:
            bound = cut_at + LEASE_DURATION_S + 1
            late = [e for e in journal if e.get("action") in ("RunInstances", "TerminateInstances")
                    and e.get("requestId") and (e.get("userAgent") or "").endswith(f"_{pid})")
                    and bound < e["time"] <= (back_at or time.time())
                    and not (e.get("error") or "").startswith("RequestLimitExceeded")]
            if late:
                self.violate("fenced", f"controller pid {pid}, cut off from the apiserver at "
                             f"{time.strftime('%H:%M:%S', time.localtime(cut_at))}, made {len(late)} cloud "
                             f"mutation(s) more than {LEASE_DURATION_S + 1} s later (its Lease had expired)",
                             [f"{time.strftime('%H:%M:%S', time.localtime(e['time']))} (+{e['time'] - cut_at:.1f}s) "
                              f"{e['action']} ids={e.get('instanceIds')} error={e.get('error')} "
                              f"faults={e.get('faults')}" for e in late[:8]])

    def count_evidence(self, journal: list[dict]) -> None:
        """What the journal and the emulator's log show of the faults of issue 19."""
        for e in journal:
            killed = e.get("killed") or {}
            if (e.get("action") == "RunInstances" and killed.get("when") == "after" and killed.get("result") == "sent"
                    and "tagIndexLagOneSeconds" in (e.get("faults") or [])):
                self.count("restarts mid-launch")
                if len(e.get("instanceIds") or []) >= 2:
                    self.count("restarts mid-launch, tag index showing part of the launch")
        with open(self.emu.log_path, errors="replace") as handle:
            refused = sum(" revoked-sid=" in line for line in handle)
        if refused:
            self.count("calls refused with a revoked key", refused)

    def check_protocol(self, journal: list[dict]) -> None:
        """The campaign never makes the controller's requests malformed, so the emulator
        must never see one: no request it cannot parse as HTTP, no authentication failure
        (an injected AuthFailure is answered after authentication and names the secret
        id, " sid=", in the access log), no parameter error that no fault injected."""
        bad = []
        with open(self.emu.log_path, errors="replace") as handle:
            for line in handle:
                line = line.rstrip("\n")
                if line.startswith("cvm-emulator: code ") or (
                        line.startswith("cvm-emulator: POST / ") and " AuthFailure." in line and " sid=" not in line
                        and " revoked-sid=" not in line):
                    bad.append(line[:300])
        malformed = ("InvalidParameter", "UnknownParameter", "MissingParameter", "InvalidAction", "NoSuchVersion",
                     "UnsupportedRegion", "InvalidFilter", "InvalidParameterCombination")
        for e in journal:
            code = e.get("error") or ""
            if e.get("requestId") and not e.get("faults") and code.split(".")[0] in malformed:
                bad.append(f"journal: {json.dumps(e)[:300]}")
        if bad:
            self.violate("protocol", f"{len(bad)} malformed request(s) reached the emulator", bad[:6])

    def launch_evidence(self, runs: list[dict], pool: str) -> list[str]:
        prefix = self.token_prefix(pool)
        lines = []
        for e in runs:
            token = e.get("clientToken") or ""
            if token.startswith(prefix):
                lines.append(f"  Run {time.strftime('%H:%M:%S', time.localtime(e['time']))} token ..{token[-6:]} "
                             f"count={e.get('count')} ids={e.get('instanceIds')} "
                             + " ".join(f"{k}={e[k]}" for k in ("replay", "error", "faults", "killed") if e.get(k)))
        return lines[-12:]

    def check_secrets(self) -> None:
        places = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith((".log", ".jsonl")):
                with open(os.path.join(self.dir, name), errors="replace") as handle:
                    if self.secret_nonce in handle.read():
                        places.append(name)
        events = self.kube.get(f"/api/v1/namespaces/{self.ns}/events") or {}
        if self.secret_nonce in json.dumps(events):
            places.append("events")
        for name, blobs in self.statuses.items():
            if any(self.secret_nonce in blob for blob in blobs):
                places.append(f"status of {name}")
        if places:
            self.violate("secret", f"secret key found in: {', '.join(places)}")

    def snapshot_statuses(self) -> None:
        """Keeps every pool's status as it is now (checked for secrets at the end)."""
        for item in self.sample_instances():
            self.statuses.setdefault(item["metadata"]["name"], []).append(json.dumps(item.get("status")))

    def sample_instances(self) -> list[dict]:
        """The pools as they are now; notes the instances their statuses record and the
        first time each doomed one (reclaimAt) shows, with its deadline."""
        now = time.time()
        items = (self.kube.get(self.sp_path()) or {}).get("items", [])
        for item in items:
            for inst in (item.get("status") or {}).get("instances") or []:
                self.recorded.add(inst.get("instanceId"))
                if inst.get("reclaimAt") and inst.get("instanceId"):
                    self.doom_seen.setdefault((item["metadata"]["name"], inst["instanceId"]), (now, inst["reclaimAt"]))
        return items

    def ctl_tail(self, n: int = 6) -> list[str]:
        """The last n distinct messages of each controller log (a repeated message, with
        only its timestamp changed, is shown once with a count)."""
        lines = []
        for ctl in self.controllers:
            path = os.path.join(self.dir, f"controller-{ctl.index}.log")
            if not os.path.exists(path):
                continue
            with open(path, errors="replace") as handle:
                raw = handle.read().splitlines()[-400:]
            distinct: list[list] = []  # [message, first line, count]
            for line in raw:
                message = line.split(" ", 1)[-1] if line[:4].isdigit() else line
                if distinct and distinct[-1][0] == message:
                    distinct[-1][2] += 1
                else:
                    distinct.append([message, line, 1])
            lines += [f"  controller-{ctl.index}.log: {line[:300]}" + (f"  (x{count})" if count > 1 else "")
                      for _, line, count in distinct[-n:]]
        return lines

    # -- the whole schedule --------------------------------------------------------------
    def run(self) -> None:
        t0 = time.time()
        self.faults_off_at = t0
        try:
            self.setup()
            settled = self.wait_settled(SETTLE_S)
            self.log(f"initial convergence: {'yes' if settled else 'no'}")
            self.fault_phase()
            self.snapshot_statuses()
            self.faults_off()
            self.wait_notices()
            self.check_convergence()
            self.snapshot_statuses()
            if self.counts.get("lease deletions"):
                lease = self.kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{self.ns}/leases/spotpool")
                if ((lease or {}).get("spec") or {}).get("holderIdentity"):
                    self.count("Lease held again after its deletion")
            self.check_mid_deletions()
            if self.plan.delete_index:
                self.emu.post("config", self.plan.delete_index)
                self.applied.append("delete-under-tagindex")
                self.log(f"deleting with the tag index lagging/dropping: {self.plan.delete_index}")
            self.delete_all()
            if self.crashes:
                self.violate("crash", "; ".join(self.crashes), self.ctl_tail())
            self.check_invariants()
            self.check_secrets()
        except Exception as err:
            if not _stopping.is_set():
                self.violate("harness", f"schedule aborted: {err}", traceback.format_exc().splitlines()[-6:])
        finally:
            self.stop_notices()
            for ctl in self.controllers:
                ctl.enabled = False
                self.kill_controller(ctl, signal.SIGTERM)
                if ctl.proxy:
                    for key, n in ctl.proxy.counts.items():
                        self.count(f"proxy {key}", n)
                    ctl.proxy.close()
            if self.emu:
                reap(self.emu.proc, signal.SIGTERM)
            self.seconds = time.time() - t0


# ----------------------------------------------------------------------------------
# The campaign
# ----------------------------------------------------------------------------------


class Campaign:
    def __init__(self, args):
        self.bin = os.path.abspath(args.bin)
        self.crd = os.path.abspath(args.crd)
        self.notice_crd = os.path.join(os.path.dirname(self.crd), "spotnotice.yaml")
        self.duration_range = args.duration
        self.without = set(args.without.split(",")) if args.without else set()
        self.force = frozenset(args.force.split(",")) if args.force else frozenset()
        self.replay_extra = ("" if args.duration == (20.0, 40.0) else f" DURATION={args.duration_text}") + \
            (f" WITHOUT={args.without}" if args.without else "") + (f" FORCE={args.force}" if args.force else "")
        self.workdir = args.workdir or tempfile.mkdtemp(prefix="spotpool-faults.")
        os.makedirs(self.workdir, exist_ok=True)
        self.k8s_dir = os.path.join(self.workdir, "k8s")
        self.kube: Kube | None = None
        self.print_lock = threading.Lock()
        self.totals: dict[str, int] = {}   # evidence counters of every schedule, summed

    def up(self) -> None:
        result = subprocess.run([os.path.join(ROOT, "scripts", "k8s-up"), self.k8s_dir], capture_output=True,
                                text=True, timeout=600)
        if result.returncode != 0:
            raise RuntimeError("k8s-up failed:\n" + result.stderr[-2000:])
        self.kube = Kube(self.k8s_dir)
        self.kube.kubectl("apply", "-f", self.crd, "-f", self.notice_crd)
        self.kube.kubectl("wait", "--for", "condition=established", "--timeout=60s",
                          "crd/spotpools.devops.jokerbai.com", "crd/spotnotices.devops.jokerbai.com")

    def down(self) -> None:
        subprocess.run([os.path.join(ROOT, "scripts", "k8s-down"), self.k8s_dir], capture_output=True, timeout=120)

    def say(self, text: str) -> None:
        with self.print_lock:
            print(text, flush=True)

    def run_one(self, seed: int) -> Schedule:
        schedule = Schedule(seed, self)
        if _stopping.is_set():
            schedule.seconds = 0
            return schedule
        schedule.run()
        plan = schedule.plan
        pools = ",".join(f"{short(p.name)}[{p.minimum}..{p.maximum}{'' if p.replicas is None else f' r{p.replicas}'}"
                         f"{' ' + p.creds if p.creds != 'env' else ''}{' retain' if p.retain else ''}]"
                         for p in plan.pools)
        index = ("" if not plan.background_index else
                 f" tagindex(lag {plan.background_index['tagIndexLagSeconds']}s,"
                 f" drop {plan.background_index['tagIndexDropProbability']}"
                 f"/{plan.background_index['tagIndexDropSeconds']}s)")
        if _stopping.is_set():
            self.say(f"seed {seed}: interrupted after {schedule.seconds:.0f}s")
            return schedule
        with self.print_lock:
            for key, n in schedule.counts.items():
                self.totals[key] = self.totals.get(key, 0) + n
        names = sorted({v.invariant for v in schedule.violations})
        result = "ok" if not names else "FAIL(" + ",".join(names) + ")"
        timing = "".join(f" {name} {value:.0f}s" for name, value in (("converged", schedule.converged_after),
                                                                  ("deleted", schedule.deleted_after))
                         if value is not None)
        lines = [f"seed {seed}: {result} {schedule.seconds:.0f}s{timing} pools={pools}"
                 f"{' leader-elect' if plan.leader else ''}{' proxied' if plan.proxied else ''}"
                 f"{f' ns({len(schedule.ns)})' if plan.long_names else ''}"
                 f"{index} foreign={len(schedule.foreign)} faults=[{' '.join(schedule.applied)}]"]
        for v in schedule.violations:
            lines.append(f"  seed {seed} violates {v.invariant}: {v.message}")
            lines += [f"    {e}" for e in v.evidence[:25]]
        if schedule.violations:
            lines.append(f"  replay: make faults SEED={seed}{self.replay_extra}   (logs: {schedule.dir})")
        self.say("\n".join(lines))
        return schedule


EVIDENCE = [  # (fault kind, counter keys shown for it)
    ("restart_mid_launch", ["restarts mid-launch", "restarts mid-launch, tag index showing part of the launch"]),
    ("cred_rotation", ["credential rotations", "credentials revoked", "calls refused with a revoked key"]),
    ("lagging_watch", ["proxy eventsDelayed", "proxy streamsCut", "proxy replays"]),
    ("long_names", ["pools with 253-character names", "instances launched by them"]),
    ("leader_cutoff", ["leader cut-offs", "leader cut-offs during a slow Run", "leader cut-offs during a slow Terminate",
                       "leader cut-offs during a slow Describe", "standby took over",
                       "instances shut down while the leader was cut off"]),
    ("lease_delete", ["lease deletions", "Lease held again after its deletion"]),
    ("notice", ["notices", "notices repeated", "notices withdrawn", "notices of instances then not reclaimed",
                "noticed instances reclaimed at the deadline", "noticed instances gone before their deadline",
                "launches of the pool between a notice and its deadline"]),
    ("forged_label", ["Nodes claiming another instance", "forged notices (forged label)"]),
    ("far_deadline", ["forged notices (far_deadline)"]),
    ("past_deadline", ["forged notices (past_deadline)"]),
    ("garbage_deadline", ["forged notices (garbage_deadline)", "forged SpotNotices refused by the CRD"]),
    ("stale_notice", ["forged notices (stale)"]),
    ("fake_notices", ["SpotNotices for made-up IDs"]),
    ("region_change", ["region changes applied", "region changes refused"]),
    ("account_change", ["Secrets swapped to another account", "inline key rotations refused by the CRD",
                        "AccountChanged holds settled by the operator"]),
    ("node_delete_fail", ["Node deletions made to fail", "proxy nodeDeletesFailed"]),
    ("node_reuse", ["Nodes re-registered under their name", "Nodes re-registered under a reused name"]),
    ("(kubelets)", ["Nodes registered", "pods placed", "evictions asked", "Nodes deleted by the controller",
                     "Nodes marked Ready Unknown", "Nodes gone before Ready Unknown"]),
]


def evidence_summary(totals: dict[str, int], schedules: list) -> str:
    """One line per fault kind of issue 19: in how many schedules it was drawn, and the
    counters that show it happened."""
    lines = ["faults: evidence of the issue-19 and issue-27 kinds (schedules drawing it; counters):"]
    for kind, keys in EVIDENCE:
        drawn = sum(1 for s in schedules if (s.plan.long_names if kind == "long_names" else s.plan.kubelets
                                              if kind == "(kubelets)" else any(e.kind == kind for e in s.plan.events)))
        lines.append(f"  {kind}: {drawn} schedule(s); " + ", ".join(f"{k}: {totals.get(k, 0)}" for k in keys))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Randomized fault campaign for spotpool.")
    parser.add_argument("--schedules", type=int, default=24)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--seed", type=int, help="run exactly this one schedule")
    parser.add_argument("--seeds", help="comma-separated seeds to run")
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--bin", default=os.environ.get("SPOTPOOL_BIN", os.path.join(ROOT, "build", "spotpool")))
    parser.add_argument("--duration", default="20:40", help="fault phase length range in seconds, MIN:MAX")
    parser.add_argument("--crd", default=os.path.join(ROOT, "crds", "spotpool.yaml"),
                        help="the CRD to apply (the one of the tree the binary was built from; its "
                        "directory's spotnotice.yaml is applied too)")
    parser.add_argument("--without", help="comma-separated fault kinds to leave out (e.g. tag_index,killhook;"
                        " tag_index also turns off the background tag-index lag/drops)")
    parser.add_argument("--force", help="comma-separated fault kinds of issue 27 to draw in every schedule "
                        "(their arguments, and every other draw, stay the seed's)")
    parser.add_argument("--workdir", help="keep logs here (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory even if all passed")
    args = parser.parse_args(argv)
    args.duration_text = args.duration
    lo, _, hi = args.duration.partition(":")
    args.duration = (float(lo), float(hi or lo))
    if args.seed is not None:
        seeds = [args.seed]
    elif args.seeds:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    else:
        seeds = list(range(args.first_seed, args.first_seed + args.schedules))
    unknown = sorted(set(args.without.split(",")) - set(KINDS)) if args.without else []
    unknown += sorted(set(args.force.split(",")) - set(ISSUE27_KINDS)) if args.force else []
    if unknown:
        print(f"faults: unknown fault kind(s) for --without: {', '.join(unknown)} (known: {' '.join(KINDS)})",
              file=sys.stderr)
        return 2
    if not os.access(args.bin, os.X_OK):
        print(f"faults: no spotpool binary at {args.bin} (make, or set SPOTPOOL_BIN)", file=sys.stderr)
        return 2
    for tool in ("kubectl",):
        if not shutil.which(tool):
            print(f"faults: {tool} not found", file=sys.stderr)
            return 2

    campaign = Campaign(args)
    t0 = time.time()

    def on_signal(signum, frame):
        _stopping.set()
        raise KeyboardInterrupt

    # Also SIGINT: a shell without job control starts background commands with SIGINT
    # ignored, and Python then keeps it ignored.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    schedules: list[Schedule] = []
    interrupted = False
    try:
        print(f"faults: {len(seeds)} schedule(s), {args.jobs} at a time, binary {args.bin}, logs {campaign.workdir}",
              flush=True)
        campaign.up()
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [pool.submit(campaign.run_one, seed) for seed in seeds]
            try:
                for future in futures:
                    schedules.append(future.result())
            except KeyboardInterrupt:
                _stopping.set()
                interrupted = True
                for future in futures:
                    future.cancel()
                kill_all_children()
                raise
    except KeyboardInterrupt:
        _stopping.set()
        interrupted = True
        print("faults: interrupted, cleaning up", file=sys.stderr, flush=True)
    except RuntimeError as err:
        print(f"faults: {err}", file=sys.stderr)
        kill_all_children()
        campaign.down()
        return 2
    finally:
        kill_all_children()
        campaign.down()
        # The logs stay; etcd's data (some 60 MB of preallocated WAL) does not.
        shutil.rmtree(os.path.join(campaign.k8s_dir, "etcd-data"), ignore_errors=True)
    violations = sum(len(s.violations) for s in schedules)
    print(evidence_summary(campaign.totals, schedules), flush=True)
    failing = [s.seed for s in schedules if s.violations]
    print(f"faults: {len(schedules)} schedules, {violations} violations, {time.time() - t0:.0f} s"
          + (f" (failing seeds: {' '.join(map(str, failing))})" if failing else ""), flush=True)
    if not failing and not args.keep and not args.workdir and not interrupted:
        shutil.rmtree(campaign.workdir, ignore_errors=True)
    return 130 if interrupted else (1 if violations else 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
