import { expect } from "chai";
import { parseDoorBytes, parseRequestCounts, perClaim, requestDelta } from "./efficiency.js";

const METRICS = (n: number): string =>
  [
    "# HELP apiserver_request_total Counter of apiserver requests",
    `apiserver_request_total{code="201",component="apiserver",dry_run="",group="ipam.metal3.io",resource="ipaddresses",scope="resource",subresource="",verb="POST",version="v1alpha1"} ${n}`,
    `apiserver_request_total{code="409",component="apiserver",dry_run="",group="ipam.metal3.io",resource="ipaddresses",scope="resource",subresource="",verb="POST",version="v1alpha1"} 2`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="ipam.metal3.io",resource="ipclaims",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} ${n}`,
    `apiserver_request_total{code="201",component="apiserver",dry_run="",group="ipam.metal3.io",resource="ipclaims",scope="resource",subresource="",verb="POST",version="v1alpha1"} ${n}`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="ipam.metal3.io",resource="ipaddresses",scope="namespace",subresource="",verb="LIST",version="v1alpha1"} ${n / 10}`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="cluster",subresource="",verb="LIST",version="v1"} ${n}`,
    `apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 3`,
  ].join("\n");

describe("bench efficiency figures", () => {
  it("sums apiserver_request_total by verb, group, resource and subresource (all codes)", () => {
    const counts = parseRequestCounts(METRICS(100));
    expect(counts.get("POST ipam.metal3.io/ipaddresses")).to.equal(102);
    expect(counts.get("PATCH ipam.metal3.io/ipclaims/status")).to.equal(100);
    expect(counts.get("LIST namespaces")).to.equal(100);
  });

  it("per claim: the driver's own creates and the plane's requests are not the controller's; Events are listed apart", () => {
    const delta = requestDelta(parseRequestCounts(METRICS(100)), parseRequestCounts(METRICS(1100)));
    const r = perClaim(delta, 1000, { "POST ipam.metal3.io/ipclaims": 1000 });
    expect(r.writes).to.equal(2); // one IPAddress create and one status patch per claim
    expect(r.reads).to.equal(0.1);
    expect(r.byVerb).to.deep.equal({
      "POST ipam.metal3.io/ipaddresses": 1,
      "PATCH ipam.metal3.io/ipclaims/status": 1,
      "LIST ipam.metal3.io/ipaddresses": 0.1,
    });
  });

  it("reads the controller's door bytes from its /metrics, and refuses a build without them", () => {
    const text = [
      "# TYPE metal3_ipam_kube_client_sent_bytes_total counter",
      "metal3_ipam_kube_client_sent_bytes_total 1234",
      'metal3_ipam_kube_client_received_bytes_total{stream="request"} 56789',
      'metal3_ipam_kube_client_received_bytes_total{stream="watch"} 1.5e+6',
      "metal3_ipam_kube_client_throttled_retries_total 0",
    ].join("\n");
    expect(parseDoorBytes(text)).to.deep.equal({ sent: 1234, received: 56789, watchReceived: 1_500_000 });
    expect(() => parseDoorBytes("metal3_ipam_kube_client_throttled_retries_total 0")).to.throw("sent,received");
  });
});
