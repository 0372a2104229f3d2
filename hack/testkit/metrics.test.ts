import { expect } from "chai";
import { metricSample, metricTotal } from "./metrics.js";

describe("testkit: reading a /metrics text", () => {
  const text = [
    "# TYPE apiserver_cache_list_total counter",
    'apiserver_cache_list_total{group="ipam.metal3.io",index="",resource="ipaddresses"} 6',
    'apiserver_cache_list_total{group="",index="f:metadata.namespace",resource="pods"} 1.5e+1',
    'apiserver_cache_list_total_other{group=""} 100',
    "go_cpu_classes_gc_total_cpu_seconds_total 1.724143111",
  ].join("\n");

  it("sums a metric's samples whatever their labels, and no other metric whose name it begins", () => {
    expect(metricTotal(text, "apiserver_cache_list_total")).to.equal(21);
    expect(metricTotal(text, "go_cpu_classes_gc_total_cpu_seconds_total")).to.equal(1.724143111);
    expect(metricTotal(text, "apiserver_storage_list_total")).to.equal(0);
  });

  it("takes the first sample with every label asked for, none of another metric whose name it begins", () => {
    expect(metricSample(text, "apiserver_cache_list_total")).to.equal(6);
    expect(metricSample(text, "apiserver_cache_list_total", { resource: "pods" })).to.equal(15);
    expect(metricSample(text, "apiserver_cache_list_total", { resource: "nodes" })).to.equal(undefined);
    expect(metricSample(text, "apiserver_cache_list_total_other")).to.equal(100);
  });
});
