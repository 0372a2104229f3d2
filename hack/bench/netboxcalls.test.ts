import { expect } from "chai";
import { activityDelta, parseActivity, totalCalls } from "./netboxcalls.js";

const AVAILABLE = 'route="/api/ipam/prefixes/{id}/available-ips/",method="POST"';
const METRICS = (posts: number, seconds: number, passes: number): string =>
  [
    "# HELP metal3_ipam_netbox_requests_total NetBox API requests by templated route, method and outcome",
    "# TYPE metal3_ipam_netbox_requests_total counter",
    `metal3_ipam_netbox_requests_total{${AVAILABLE},code="201"} ${posts}`,
    `metal3_ipam_netbox_requests_total{${AVAILABLE},code="Timeout"} 1`,
    'metal3_ipam_netbox_requests_total{route="/api/extras/tags/",method="GET",code="200"} 3',
    `metal3_ipam_netbox_request_duration_seconds_bucket{le="0.5",${AVAILABLE}} ${posts}`,
    `metal3_ipam_netbox_request_duration_seconds_sum{${AVAILABLE}} ${seconds}`,
    `metal3_ipam_netbox_request_duration_seconds_count{${AVAILABLE}} ${posts + 1}`,
    'metal3_ipam_netbox_request_duration_seconds_sum{route="/api/extras/tags/",method="GET"} 0.3',
    `metal3_ipam_workqueue_work_duration_seconds_sum{controller="ippool"} ${passes * 2}`,
    `metal3_ipam_workqueue_work_duration_seconds_count{controller="ippool"} ${passes}`,
    'metal3_ipam_workqueue_work_duration_seconds_bucket{le="+Inf",controller="ippool"} 4',
    "metal3_ipam_leader 1",
  ].join("\n");

describe("bench: the controller's NetBox calls from its /metrics", () => {
  it("reads calls by method and route (braces in the route), outcomes, seconds waiting, and passes", () => {
    const a = parseActivity(METRICS(20, 12.5, 4));
    expect(a.netbox["POST /api/ipam/prefixes/{id}/available-ips/"]).to.deep.equal({
      count: 21,
      seconds: 12.5,
      codes: { "201": 20, Timeout: 1 },
    });
    expect(a.netbox["GET /api/extras/tags/"]).to.deep.equal({ count: 3, seconds: 0.3, codes: { "200": 3 } });
    expect(a.passes).to.deep.equal({ ippool: { count: 4, seconds: 8 } });
    expect(totalCalls(a.netbox)).to.deep.equal({ count: 24, seconds: 12.8 });
  });

  it("keeps what changed over a window", () => {
    const d = activityDelta(parseActivity(METRICS(20, 12.5, 4)), parseActivity(METRICS(30, 20, 6)));
    expect(d.netbox).to.deep.equal({
      "POST /api/ipam/prefixes/{id}/available-ips/": { count: 10, seconds: 7.5, codes: { "201": 10 } },
    });
    expect(d.passes).to.deep.equal({ ippool: { count: 2, seconds: 4 } });
  });
});
