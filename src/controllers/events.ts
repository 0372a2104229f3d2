/** Kubernetes Events on our objects: where users look first (`kubectl describe`). Failures to record are logged only. */
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { KubeObject } from "../kube/resource.js";
import { describeError } from "../kube/errors.js";
import type { Logger } from "../runtime/logger.js";

/** RBAC for recording Events. */
export const EVENT_RULES = [{ apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] }];

export const COMPONENT = "metal3-ipam-controller";

export interface EventSink {
  record(obj: KubeObject, type: "Normal" | "Warning", reason: string, message: string): void;
}

export class EventRecorder implements EventSink {
  private readonly api: CoreV1Api;

  constructor(kc: KubeConfig, private readonly logger: Logger) {
    this.api = kc.makeApiClient(CoreV1Api);
  }

  /** Fire-and-forget: an Event that cannot be written must never fail a reconcile. */
  record(obj: KubeObject, type: "Normal" | "Warning", reason: string, message: string): void {
    const namespace = obj.metadata.namespace ?? "default";
    const now = new Date();
    this.api
      .createNamespacedEvent({
        namespace,
        body: {
          metadata: { generateName: `${obj.metadata.name ?? "object"}.` },
          involvedObject: {
            apiVersion: obj.apiVersion,
            kind: obj.kind,
            name: obj.metadata.name,
            namespace,
            uid: obj.metadata.uid,
            resourceVersion: obj.metadata.resourceVersion,
          },
          reason,
          message: message.slice(0, 1024),
          type,
          count: 1,
          firstTimestamp: now,
          lastTimestamp: now,
          source: { component: COMPONENT },
          reportingComponent: COMPONENT,
        },
      })
      .catch((err: unknown) => this.logger.warn("Could not record Event", { reason, error: describeError(err) }));
  }
}
