#!/usr/bin/env python3
"""Unit tests of the CVM emulator's fault machinery used by the fault campaign:
tag-index lag and drops (docs/how-it-works.md, "Visibility"), id lookups that keep
finding an instance once returned, the per-launch tagIndexLagSeconds fault, kill hooks
(before/after a call), live-count history, seeded ids, noticed reclaims and the
instance metadata that announces them; DescribeInstancesStatus as the SDK documents
it, with its own rate limit; STS GetCallerIdentity naming each account. Runs a real emulator process
on 127.0.0.1 and talks to it over HTTP with signed requests.

    python3 tests/faults/test_emulator_faults.py [-v]
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import cvm_emulator as emu  # noqa: E402

sys.path.insert(0, HERE)
import campaign  # noqa: E402

SECRET_ID = "AKIDfaultsUnitTest000000000000000000"
SECRET_KEY = "faultsUnitTestKeyNeverLogged"
REGION = "ap-singapore"
TAG_KEY = "spotpool.jokerbai.com/pool"


class Client:
    """Signs like the real SDK (TC3, content-type and host signed)."""

    def __init__(self, port: int):
        self.port = port

    def call(self, action: str, params: dict, timeout: float = 10.0, secret_id: str = SECRET_ID,
             secret_key: str = SECRET_KEY, service: str = "cvm", version: str = emu.API_VERSION,
             sign_service: str | None = None) -> dict:
        body = json.dumps(params).encode()
        ts = int(time.time())
        date = emu.utc_date(ts)
        host = f"127.0.0.1:{self.port}"
        headers = {"content-type": "application/json", "host": host}
        hashed = emu.sha256_hex(emu.canonical_request(headers, ["content-type", "host"], body).encode())
        signed_for = sign_service or service
        sig = emu.signature(secret_key, date, emu.string_to_sign(ts, date, hashed, signed_for), signed_for)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("POST", "/", body, {
                "Content-Type": "application/json", "Host": host, "X-TC-Action": action,
                "X-TC-Version": version, "X-TC-Timestamp": str(ts), "X-TC-Region": REGION,
                "Authorization": f"TC3-HMAC-SHA256 Credential={secret_id}/{date}/{service}/tc3_request, "
                                 f"SignedHeaders=content-type;host, Signature={sig}"})
            return json.loads(conn.getresponse().read())["Response"]
        finally:
            conn.close()

    def control(self, method: str, path: str, payload: dict | None = None):
        status, data = campaign.emulator_control(self.port, method, path, payload, timeout=10)
        if status != 200:
            raise AssertionError(f"{method} {path}: {status} {data}")
        return data

    def run(self, pool: str = "ns/p", **extra) -> list[str]:
        params = {"Placement": {"Zone": REGION + "-2"}, "ImageId": "img-x", "InstanceType": "S5.MEDIUM4",
                  "InstanceChargeType": "SPOTPAID",
                  "InstanceMarketOptions": {"MarketType": "spot", "SpotOptions": {"MaxPrice": "1.0"}},
                  "TagSpecification": [{"ResourceType": "instance", "Tags": [{"Key": TAG_KEY, "Value": pool}]}],
                  **extra}
        response = self.call("RunInstances", params)
        assert "Error" not in response, response
        return response["InstanceIdSet"]

    def by_tag(self, pool: str = "ns/p") -> list[str]:
        response = self.call("DescribeInstances", {"Filters": [{"Name": "tag:" + TAG_KEY, "Values": [pool]}],
                                                   "Limit": 100})
        return [i["InstanceId"] for i in response["InstanceSet"]]

    def by_id(self, ids: list[str]) -> list[str]:
        response = self.call("DescribeInstances", {"InstanceIds": ids, "Limit": 100})
        return [i["InstanceId"] for i in response["InstanceSet"]]


class EmulatorFaults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        port_file = os.path.join(cls.tmp.name, "port")
        cls.log = open(os.path.join(cls.tmp.name, "emulator.log"), "w")
        cls.proc = subprocess.Popen(
            [sys.executable, os.path.join(os.path.dirname(HERE), "cvm_emulator.py"), "--port", "0",
             "--port-file", port_file, "--secret-id", SECRET_ID, "--secret-key", SECRET_KEY,
             "--pending-seconds", "0.3", "--terminating-seconds", "0.3", "--seed", "11"],
            stdout=cls.log, stderr=cls.log)
        deadline = time.time() + 10
        port = ""
        while not port:
            if time.time() > deadline or cls.proc.poll() is not None:
                raise RuntimeError("emulator did not start")
            time.sleep(0.05)
            if os.path.exists(port_file):
                with open(port_file) as handle:
                    port = handle.read().strip()
        cls.client = Client(int(port))

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(10)
        cls.log.close()
        with open(os.path.join(cls.tmp.name, "emulator.log")) as handle:
            assert SECRET_KEY not in handle.read(), "secret key in the emulator log"
        cls.tmp.cleanup()

    def setUp(self):
        self.c = self.client
        self.c.control("POST", "reset", {})
        self.c.control("POST", "config", {"tagIndexLagSeconds": 0, "tagIndexDropProbability": 0,
                                          "tagIndexDropSeconds": 5})

    def test_tag_index_lag(self):
        self.c.control("POST", "config", {"tagIndexLagSeconds": 1.0})
        ids = self.c.run("ns/lag")
        self.assertEqual(self.c.by_tag("ns/lag"), [], "a new instance is not in the tag index yet")
        self.assertEqual(self.c.by_id(ids), ids, "an id lookup bypasses the index")
        unfiltered = self.c.call("DescribeInstances", {"Limit": 100})["InstanceSet"]
        self.assertIn(ids[0], [i["InstanceId"] for i in unfiltered], "no tag filter: no index")
        tagged = [e for e in self.c.control("GET", "journal") if e["action"] == "DescribeInstances" and e.get("filters")]
        self.assertEqual(tagged[-1]["indexHidden"], 1)
        time.sleep(1.1)
        self.assertEqual(self.c.by_tag("ns/lag"), ids, "indexed once the lag has passed")

    def test_tag_index_lag_fault_per_launch(self):
        self.c.control("POST", "fault", {"action": "RunInstances", "tagIndexLagSeconds": 1.0})
        slow = self.c.run("ns/f")
        fast = self.c.run("ns/f")
        self.assertEqual(self.c.by_tag("ns/f"), fast)
        time.sleep(1.1)
        self.assertEqual(sorted(self.c.by_tag("ns/f")), sorted(slow + fast))

    def test_tag_index_drop_and_id_monotonicity(self):
        ids = self.c.run("ns/drop")
        self.assertEqual(self.c.by_tag("ns/drop"), ids)
        self.c.control("POST", "config", {"tagIndexDropProbability": 1, "tagIndexDropSeconds": 0.8})
        self.assertEqual(self.c.by_tag("ns/drop"), [], "dropped out of the index")
        self.c.control("POST", "config", {"tagIndexDropProbability": 0})
        self.assertEqual(self.c.by_tag("ns/drop"), [], "still out for tagIndexDropSeconds")
        for _ in range(5):
            self.assertEqual(self.c.by_id(ids), ids, "an id lookup keeps finding it")
        listed = self.c.control("GET", "instances")
        self.assertIsNotNone(listed[0]["indexDroppedUntil"])
        self.assertTrue(listed[0]["seen"])
        time.sleep(0.9)
        self.assertEqual(self.c.by_tag("ns/drop"), ids, "comes back after the drop")

    def test_drop_is_per_instance_and_seeded(self):
        self.c.control("POST", "config", {"seed": 5})
        ids = self.c.run("ns/many", InstanceCount=20)
        self.c.control("POST", "config", {"tagIndexDropProbability": 0.5, "tagIndexDropSeconds": 60})
        shown = self.c.by_tag("ns/many")
        self.assertTrue(0 < len(shown) < 20, f"some, not all, dropped: {len(shown)}")
        self.assertEqual(sorted(self.c.by_id(ids)), sorted(ids))

    def test_invisible_then_found_by_id_forever(self):
        self.c.control("POST", "fault", {"action": "RunInstances", "invisibleSeconds": 0.6})
        ids = self.c.run("ns/inv")
        self.assertEqual(self.c.by_id(ids), [], "invisible to every describe, ids too")
        time.sleep(0.7)
        self.assertEqual(self.c.by_id(ids), ids)
        self.c.control("POST", "config", {"tagIndexDropProbability": 1, "tagIndexDropSeconds": 60})
        for _ in range(5):
            self.assertEqual(self.c.by_id(ids), ids)
        self.c.call("TerminateInstances", {"InstanceIds": ids})
        time.sleep(0.5)
        self.assertEqual(self.c.by_id(ids), [], "gone for real")

    def _victim(self):
        return subprocess.Popen(["sleep", "30"])

    def test_kill_hook_before(self):
        victim = self._victim()
        self.c.control("POST", "killhook", {"action": "RunInstances", "when": "before", "pid": victim.pid,
                                            "comm": "not-sleep"})
        with self.assertRaises((http.client.HTTPException, ConnectionError)):
            self.c.run("ns/kb")
        self.assertIsNone(victim.poll(), "comm differs: no signal")
        self.c.control("POST", "killhook", {"action": "RunInstances", "when": "before", "pid": victim.pid,
                                            "comm": "sleep"})
        self.assertEqual(len(self.c.control("GET", "killhooks")), 1)
        with self.assertRaises((http.client.HTTPException, ConnectionError)):
            self.c.run("ns/kb")
        self.assertEqual(victim.wait(5), -signal.SIGKILL)
        self.assertEqual(self.c.control("GET", f"stats?tagKey={TAG_KEY}&tagValue=ns/kb")["launched"], 0)
        self.assertEqual(self.c.control("GET", "killhooks"), [], "used up")
        killed = [e for e in self.c.control("GET", "journal") if e.get("killed")]
        self.assertEqual(killed[0]["killed"]["when"], "before")
        self.assertEqual(self.c.run("ns/kb") != [], True, "the next call is served")

    def test_kill_hook_after(self):
        ids = self.c.run("ns/ka")
        victim = self._victim()
        self.c.control("POST", "killhook", {"action": "*", "when": "after", "pid": victim.pid,
                                            "signal": int(signal.SIGTERM)})
        with self.assertRaises((http.client.HTTPException, ConnectionError)):
            self.c.call("TerminateInstances", {"InstanceIds": ids})
        self.assertEqual(victim.wait(5), -signal.SIGTERM)
        states = {i["InstanceId"]: i["InstanceState"] for i in self.c.control("GET", "instances")}
        self.assertEqual(states.get(ids[0], "gone") in ("TERMINATING", "gone"), True, "the call was done")
        self.c.control("POST", "killhook", {"action": "RunInstances", "when": "after", "pid": victim.pid})
        self.assertEqual(self.c.control("POST", "killhook", {"clear": True})["cleared"], 1)

    def test_live_history(self):
        ids = self.c.run("ns/h")
        self.c.call("TerminateInstances", {"InstanceIds": ids})
        stats = self.c.control("GET", f"stats?tagKey={TAG_KEY}&tagValue=ns/h&history=1")
        self.assertEqual([point[1] for point in stats["history"]], [1, 0])
        self.assertEqual(stats["maxLive"], 1)

    def test_revoked_credentials_named_in_the_log(self):
        rotated, key = "AKIDfaultsUnitTestRotated0000000001", "rotatedKeyNeverLogged"
        self.c.control("POST", "credentials", {"secretId": rotated, "secretKey": key})
        self.assertNotIn("Error", self.c.call("DescribeInstances", {"Limit": 1}, secret_id=rotated, secret_key=key))
        self.c.control("POST", "credentials", {"secretId": rotated, "remove": True})
        answer = self.c.call("DescribeInstances", {"Limit": 1}, secret_id=rotated, secret_key=key)
        self.assertEqual(answer["Error"]["Code"], "AuthFailure.SecretIdNotFound")
        unknown = self.c.call("DescribeInstances", {"Limit": 1}, secret_id="AKIDneverKnown", secret_key=key)
        self.assertEqual(unknown["Error"]["Code"], "AuthFailure.SecretIdNotFound")
        self.log.flush()
        time.sleep(0.2)
        with open(os.path.join(self.tmp.name, "emulator.log")) as handle:
            text = handle.read()
        self.assertIn(f"revoked-sid={rotated}", text)
        self.assertNotIn("revoked-sid=AKIDneverKnown", text, "only a removed id is called revoked")

    def test_accounts_see_their_own_instances(self):
        other, key = "AKIDfaultsUnitTestOtherAccount00001", "otherAccountKeyNeverLogged"
        self.c.control("POST", "credentials", {"secretId": other, "secretKey": key, "account": "other"})
        mine = self.c.run("ns/acct", ClientToken="tok-accounts")
        self.assertEqual(self.c.call("DescribeInstances", {"InstanceIds": mine}, secret_id=other,
                                     secret_key=key)["InstanceSet"], [], "another account's instance is unknown")
        answer = self.c.call("TerminateInstances", {"InstanceIds": mine}, secret_id=other, secret_key=key)
        self.assertEqual(answer["Error"]["Code"], "InvalidInstanceId.NotFound")
        params = {"Placement": {"Zone": REGION + "-2"}, "ImageId": "img-x", "InstanceType": "S5.MEDIUM4",
                  "ClientToken": "tok-accounts"}
        theirs = self.c.call("RunInstances", params, secret_id=other, secret_key=key)["InstanceIdSet"]
        self.assertNotEqual(theirs, mine, "a client token is replayed within its account only")
        accounts = {i["InstanceId"]: i["account"] for i in self.c.control("GET", "instances")}
        self.assertEqual((accounts[mine[0]], accounts[theirs[0]]), ("main", "other"))
        self.assertEqual(self.c.by_id(mine + theirs), mine)
        self.c.control("POST", "credentials", {"secretId": other, "remove": True})

    def test_caller_identity(self):
        """STS GetCallerIdentity, shaped as the SDK's GetCallerIdentityResponseParams: one
        AccountId per account, the same for a rotated key of it."""
        rotated, other, key = "AKIDfaultsUnitTestStsRotated0000001", "AKIDfaultsUnitTestStsOther00000001", "k"
        self.c.control("POST", "credentials", {"secretId": rotated, "secretKey": key})
        self.c.control("POST", "credentials", {"secretId": other, "secretKey": key, "account": "other"})

        def sts(secret_id=SECRET_ID, secret_key=SECRET_KEY, **kw):
            kw.setdefault("version", emu.STS_API_VERSION)
            return self.c.call(kw.pop("action", "GetCallerIdentity"), kw.pop("params", {}), secret_id=secret_id,
                               secret_key=secret_key, service="sts", **kw)
        main = sts()
        self.assertEqual(set(main) - {"RequestId"}, {"Arn", "AccountId", "UserId", "PrincipalId", "Type"})
        self.assertRegex(main["AccountId"], r"^[0-9]{12}$")
        self.assertEqual(main["Arn"], f"qcs::cam::uin/{main['AccountId']}:uin/{main['AccountId']}")
        self.assertEqual(sts(rotated, key)["AccountId"], main["AccountId"], "a rotated key: the same account")
        self.assertNotEqual(sts(other, key)["AccountId"], main["AccountId"], "another account")
        # Verified as the CVM calls are: the scope's service is part of the signature.
        self.assertEqual(sts(sign_service="cvm")["Error"]["Code"], "AuthFailure.SignatureFailure")
        self.assertEqual(sts(version=emu.API_VERSION)["Error"]["Code"], "NoSuchVersion")
        self.assertEqual(sts(action="DescribeInstances")["Error"]["Code"], "InvalidAction")
        self.assertEqual(self.c.call("GetCallerIdentity", {})["Error"]["Code"], "InvalidAction")  # not CVM's
        self.assertEqual(sts(params={"Foo": 1})["Error"]["Code"], "UnknownParameter")
        self.c.control("POST", "credentials", {"secretId": rotated, "remove": True})
        self.assertEqual(sts(rotated, key)["Error"]["Code"], "AuthFailure.SecretIdNotFound")
        self.c.control("POST", "fault", {"action": "GetCallerIdentity", "errorCode": "InternalError"})
        self.assertEqual(sts()["Error"]["Code"], "InternalError")
        self.assertEqual(sts()["AccountId"], main["AccountId"])
        # "*" is every CVM action: the campaign's faults stay meant for the calls that act.
        self.c.control("POST", "fault", {"action": "*", "errorCode": "InternalError"})
        self.assertEqual(sts()["AccountId"], main["AccountId"])
        self.assertEqual(self.c.call("DescribeInstances", {"Limit": 1})["Error"]["Code"], "InternalError")
        self.c.control("POST", "credentials", {"secretId": other, "remove": True})

    def test_address_base(self):
        self.c.control("POST", "config", {"addressBase": 7 << 16})
        ids = self.c.control("POST", "instances", {"region": REGION})["instanceIds"]
        listed = {i["InstanceId"]: i for i in self.c.control("GET", "instances")}
        self.assertTrue(listed[ids[0]]["PrivateIpAddresses"][0].startswith("10.7."), listed[ids[0]])

    def metadata(self, instance_id: str, item: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.c.port, timeout=10)
        try:
            conn.request("GET", f"/metadata/{instance_id}/latest/meta-data/{item}")
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()

    def test_noticed_reclaim(self):
        ids = self.c.run("ns/n")
        self.assertEqual(self.metadata(ids[0], "instance-id"), (200, ids[0]))
        self.assertEqual(self.metadata(ids[0], "spot/termination-time")[0], 404)
        answer = self.c.control("POST", "reclaim", {"instanceIds": ids, "noticeSeconds": 1.5})
        self.assertEqual(answer["announced"], ids)
        status, text = self.metadata(ids[0], "spot/termination-time")
        self.assertEqual(status, 200)
        self.assertEqual(text, answer["terminationTime"])
        # UTC+8, whole seconds, not after the reclaim
        self.assertEqual(text, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(int(answer["reclaimAt"]) + 8 * 3600)))
        self.assertEqual(self.c.by_id(ids), ids, "announced, not reclaimed yet")
        time.sleep(1.7)
        self.assertEqual(self.c.by_id(ids), [])
        with self.assertRaises(http.client.RemoteDisconnected):  # gone with its instance
            self.metadata(ids[0], "spot/termination-time")
        self.assertEqual(self.c.control("GET", f"stats?tagKey={TAG_KEY}&tagValue=ns/n")["reclaimed"], 1)

    def test_cancelled_notice(self):
        ids = self.c.run("ns/c")
        self.c.control("POST", "reclaim", {"instanceIds": ids, "noticeSeconds": 0.5})
        self.assertEqual(self.c.control("POST", "notice", {"instanceIds": ids, "cancel": True})["cancelled"], ids)
        time.sleep(0.7)
        self.assertEqual(self.c.by_id(ids), ids, "a withdrawn notice reclaims nothing")
        self.assertEqual(self.metadata(ids[0], "spot/termination-time")[0], 404)
        with self.assertRaises(AssertionError):
            self.c.control("POST", "notice", {"instanceIds": ids})

    def test_noticed_reclaim_to_shutdown(self):
        ids = self.c.run("ns/s")
        answer = self.c.control("POST", "reclaim", {"instanceIds": ids, "noticeSeconds": 0.3, "shutdown": True})
        time.sleep(0.5)
        self.assertEqual([i["InstanceState"] for i in self.c.control("GET", "instances") if i["InstanceId"] == ids[0]],
                         ["SHUTDOWN"])
        self.assertEqual(self.metadata(ids[0], "spot/termination-time"), (200, answer["terminationTime"]))

    def test_bad_control_input(self):
        for payload in ({"action": "X", "when": "before", "pid": 5}, {"action": "*", "when": "never", "pid": 5},
                        {"action": "*", "when": "after", "pid": 0}):
            with self.assertRaises(AssertionError):
                self.c.control("POST", "killhook", payload)
        with self.assertRaises(AssertionError):
            self.c.control("POST", "config", {"tagIndexDropProbability": 2})

    def test_describe_instances_status(self):
        ids = self.c.run(InstanceCount=3)
        self.c.control("POST", "reclaim", {"instanceIds": [ids[1]], "shutdown": True})
        gone = "ins-00000000"
        answer = self.c.call("DescribeInstancesStatus", {"InstanceIds": ids + [gone], "Limit": 100})
        self.assertEqual(answer["TotalCount"], 3)  # the unknown id is simply absent
        states = {s["InstanceId"]: s["InstanceState"] for s in answer["InstanceStatusSet"]}
        self.assertEqual(set(states), set(ids))
        self.assertEqual(states[ids[1]], "SHUTDOWN")
        self.assertIn("RequestId", answer)
        page = self.c.call("DescribeInstancesStatus", {"InstanceIds": ids, "Offset": 1, "Limit": 1})
        self.assertEqual((page["TotalCount"], len(page["InstanceStatusSet"])), (3, 1))
        too_many = [f"ins-{i:08d}" for i in range(101)]
        for params, code in (({"InstanceIds": too_many}, "InvalidParameterValue.LimitExceeded"),
                             ({"InstanceIds": ["i-bad"]}, "InvalidInstanceId.Malformed"),
                             ({"Limit": 101}, "InvalidParameterValue.LimitExceeded"),
                             ({"Filters": []}, "UnknownParameter")):
            self.assertEqual(self.c.call("DescribeInstancesStatus", params)["Error"]["Code"], code, params)

    def test_describe_instances_status_rate_limit(self):
        """40/s of its own: a burst past it is refused, while DescribeInstances still answers."""
        self.c.control("POST", "throttle", {"action": "DescribeInstancesStatus", "perSecond": 2})
        codes = [self.c.call("DescribeInstancesStatus", {}).get("Error", {}).get("Code") for _ in range(6)]
        self.assertIn("RequestLimitExceeded", codes)
        self.assertNotIn("Error", self.c.call("DescribeInstances", {}))
        rates = self.c.control("POST", "throttle", {"action": "DescribeInstancesStatus", "perSecond": None})["rates"]
        self.assertEqual(rates["DescribeInstancesStatus"], 40.0)

    def test_describe_instance_type_configs(self):
        """The catalogue as the SDK's InstanceTypeConfig: the GPU types with their GPUs,
        once per zone; filters; a type added through the control API; SDK errors."""
        self.c.control("POST", "throttle", {"action": "DescribeInstanceTypeConfigs", "perSecond": 1000})
        every = self.c.call("DescribeInstanceTypeConfigs", {})["InstanceTypeConfigSet"]
        zones = {t["Zone"] for t in every}
        self.assertEqual(zones, {f"{REGION}-{n}" for n in range(1, 5)})
        gn7 = [t for t in every if t["InstanceType"] == "GN7.2XLARGE32"]
        self.assertEqual(len(gn7), 4)
        self.assertEqual({k: gn7[0][k] for k in ("InstanceFamily", "CPU", "Memory", "GPU", "GpuCount", "GpuType")},
                         {"InstanceFamily": "GN7", "CPU": 8, "Memory": 32, "GPU": 1, "GpuCount": 1.0,
                          "GpuType": "NVIDIA T4"})
        answer = self.c.call("DescribeInstanceTypeConfigs", {"Filters": [
            {"Name": "zone", "Values": [REGION + "-9"]}, {"Name": "instance-family", "Values": ["GN10Xp", "GN7vw"]}]})
        got = {(t["Zone"], t["InstanceType"], t["GPU"], t["GpuCount"]) for t in answer["InstanceTypeConfigSet"]}
        self.assertEqual(got, {(REGION + "-9", "GN10Xp.2XLARGE40", 1, 1.0), (REGION + "-9", "GN10Xp.20XLARGE320", 8, 8.0),
                               (REGION + "-9", "GN7vw.3XLARGE24", 1, 0.5)})
        s5 = self.c.call("DescribeInstanceTypeConfigs", {"Filters": [{"Name": "instance-type", "Values": ["S5.LARGE8"]}]})
        self.assertEqual({(t["CPU"], t["Memory"], t["GPU"]) for t in s5["InstanceTypeConfigSet"]}, {(4, 8, 0)})
        self.assertNotIn("GpuType", s5["InstanceTypeConfigSet"][0])
        self.c.control("POST", "instance-types", {"instanceType": "GX9.4XLARGE64", "cpu": 16, "memory": 64, "gpu": 2,
                                                  "gpuType": "Test"})
        added = self.c.call("DescribeInstanceTypeConfigs", {"Filters": [
            {"Name": "instance-type", "Values": ["GX9.4XLARGE64"]}, {"Name": "zone", "Values": [REGION + "-1"]}]})
        self.assertEqual(added["InstanceTypeConfigSet"],
                         [{"Zone": REGION + "-1", "InstanceType": "GX9.4XLARGE64", "InstanceFamily": "GX9", "GPU": 2,
                           "CPU": 16, "Memory": 64, "FPGA": 0, "GpuCount": 2.0, "GpuType": "Test"}])
        for params, code in (({"Filters": [{"Name": "gpu", "Values": ["1"]}]}, "InvalidFilter"),
                             ({"Filters": [{"Name": "zone", "Values": []}]}, "MissingParameter"),
                             ({"Filters": [{"Name": "zone", "Values": ["a"] * 6}]}, "InvalidFilterValue.LimitExceeded"),
                             ({"Filters": [{"Name": "zone", "Values": ["a"]}] * 11}, "InvalidParameterValue.LimitExceeded"),
                             ({"Filters": [{"Name": "tag:x", "Values": ["a"]}]}, "InvalidFilter"),
                             ({"Limit": 10}, "UnknownParameter"),
                             ({"Filters": "zone"}, "InvalidParameter")):
            self.assertEqual(self.c.call("DescribeInstanceTypeConfigs", params)["Error"]["Code"], code, params)
        self.c.control("POST", "reset", {})
        self.assertEqual(self.c.call("DescribeInstanceTypeConfigs", {"Filters": [
            {"Name": "instance-type", "Values": ["GX9.4XLARGE64"]}]})["InstanceTypeConfigSet"], [])


class Plans(unittest.TestCase):
    """The schedule generator: seeded, and the issue-19 kinds can be left out."""

    def test_seeded_and_without(self):
        kinds = set()
        for seed in range(1, 40):
            a, b = campaign.make_plan(seed, (20, 40)), campaign.make_plan(seed, (20, 40))
            self.assertEqual(a, b)
            kinds |= {e.kind for e in a.events} | ({"long_names"} if a.long_names else set())
            b.finalize(set(campaign.NEW_KINDS))
            self.assertFalse(b.long_names or {e.kind for e in b.events} & set(campaign.NEW_KINDS))
            self.assertTrue(all(len(p.name) <= 3 for p in b.pools))
            self.assertTrue(all(e.args["pool"] in {p.name for p in b.pools} for e in b.events if "pool" in e.args))
            a.finalize(set())
            if any(e.kind in campaign.NEEDS_LEADER for e in a.events):
                self.assertTrue(a.leader)
        self.assertTrue(set(campaign.NEW_KINDS) <= kinds, set(campaign.NEW_KINDS) - kinds)
        self.assertTrue(kinds <= set(campaign.KINDS), kinds - set(campaign.KINDS))

    def test_issue27_kinds_forced_and_left_out(self):
        drawn = set()
        for seed in range(1, 60):
            plain = campaign.make_plan(seed, (20, 40))
            drawn |= {e.kind for e in plain.events}
            forced = campaign.make_plan(seed, (20, 40), frozenset({"node_reuse", "past_deadline"}))
            kinds = [e.kind for e in forced.events]
            self.assertIn("node_reuse", kinds)
            self.assertIn("past_deadline", kinds)
            # Forcing adds those events and changes no other draw.
            self.assertEqual([e for e in plain.events if e.kind not in ("node_reuse", "past_deadline")],
                             [e for e in forced.events if e.kind not in ("node_reuse", "past_deadline")])
            self.assertTrue(forced.kubelets and forced.proxied)
            forced.finalize(set(campaign.ISSUE27_KINDS))
            self.assertFalse({e.kind for e in forced.events} & set(campaign.ISSUE27_KINDS))
        self.assertTrue(set(campaign.ISSUE27_KINDS) <= drawn, set(campaign.ISSUE27_KINDS) - drawn)

    def test_long_owner_tag(self):
        ns, name = campaign.long_name("faults-1-", 63), campaign.long_name("p0-", 253)
        self.assertEqual((len(ns), len(name)), (63, 253))
        tag = campaign.owner_tag(ns, name)
        self.assertEqual((len(tag), tag[222]), (255, "#"))
        self.assertEqual(campaign.owner_tag("ns", "p"), "ns/p")


class SeededIds(unittest.TestCase):
    def test_same_seed_same_ids(self):
        a, b = emu.Emulator(1, 1, None, seed=7), emu.Emulator(1, 1, None, seed=7)
        self.assertEqual([a._new_instance_id() for _ in range(3)], [b._new_instance_id() for _ in range(3)])


if __name__ == "__main__":
    unittest.main()
