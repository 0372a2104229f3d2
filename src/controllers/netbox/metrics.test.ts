import { expect } from "chai";
import { PrometheusMetrics } from "../../runtime/metrics.js";
import { NETBOX_METRICS } from "./metrics.js";

/** The exposition lines of the registry that start with `prefix`. */
async function lines(m: PrometheusMetrics, prefix: string): Promise<string[]> {
  return (await m.registry.metrics()).split("\n").filter((l) => l.startsWith(prefix));
}

describe("NetBox metrics", () => {
  it("exports a NetBox pool's drift per kind, zeros included, and drops it when the pool is gone", async () => {
    const m = new PrometheusMetrics();
    const pool = { kind: "NetBoxIPPool", namespace: "ns", name: "p" };
    const other = { kind: "GlobalNetBoxIPPool", namespace: "", name: "g" };
    const netBox = m.extend(NETBOX_METRICS);
    netBox.drift(pool, { missing: 0, unclaimed: 2 });
    netBox.drift(other, { missing: 1, unclaimed: 0 });
    expect(await lines(m, "metal3_ipam_netbox_drift_records{")).to.deep.equal([
      'metal3_ipam_netbox_drift_records{namespace="ns",pool="p",pool_kind="NetBoxIPPool",drift="missing"} 0',
      'metal3_ipam_netbox_drift_records{namespace="ns",pool="p",pool_kind="NetBoxIPPool",drift="unclaimed"} 2',
      'metal3_ipam_netbox_drift_records{namespace="",pool="g",pool_kind="GlobalNetBoxIPPool",drift="missing"} 1',
      'metal3_ipam_netbox_drift_records{namespace="",pool="g",pool_kind="GlobalNetBoxIPPool",drift="unclaimed"} 0',
    ]);
    // The controller forgets the pool through ControllerMetrics, which knows no NetBox series.
    m.poolGone(pool);
    expect(await lines(m, "metal3_ipam_netbox_drift_records{")).to.deep.equal([
      'metal3_ipam_netbox_drift_records{namespace="",pool="g",pool_kind="GlobalNetBoxIPPool",drift="missing"} 1',
      'metal3_ipam_netbox_drift_records{namespace="",pool="g",pool_kind="GlobalNetBoxIPPool",drift="unclaimed"} 0',
    ]);
  });

  it("counts requests by route, method and status or failure reason, and times them", async () => {
    const m = new PrometheusMetrics();
    const netBox = m.extend(NETBOX_METRICS);
    netBox.request({ method: "GET", route: "/api/ipam/prefixes/", status: 200, seconds: 0.03 });
    netBox.request({ method: "POST", route: "/api/ipam/prefixes/{id}/available-ips/", reason: "Timeout", seconds: 7 });
    expect(await lines(m, "# HELP metal3_ipam_netbox_")).to.deep.equal([
      "# HELP metal3_ipam_netbox_requests_total NetBox API requests by templated route, method and outcome (HTTP status, or the failure reason)",
      "# HELP metal3_ipam_netbox_request_duration_seconds NetBox API request latency by templated route and method",
      "# HELP metal3_ipam_netbox_drift_records NetBox pool drift: IPAddresses whose NetBox record is gone (missing), records of ours no claim holds (unclaimed)",
    ]);
    expect(await lines(m, "metal3_ipam_netbox_requests_total{")).to.deep.equal([
      'metal3_ipam_netbox_requests_total{route="/api/ipam/prefixes/",method="GET",code="200"} 1',
      'metal3_ipam_netbox_requests_total{route="/api/ipam/prefixes/{id}/available-ips/",method="POST",code="Timeout"} 1',
    ]);
    const buckets = (await lines(m, 'metal3_ipam_netbox_request_duration_seconds_bucket{le="'))
      .filter((l) => l.includes('method="POST"'))
      .map((l) => /le="([^"]+)".* (\d+)$/.exec(l)?.slice(1).join(":"));
    expect(buckets).to.deep.equal([
      "0.01:0",
      "0.025:0",
      "0.05:0",
      "0.1:0",
      "0.25:0",
      "0.5:0",
      "1:0",
      "2.5:0",
      "5:0",
      "10:1",
      "+Inf:1",
    ]);
  });
});
