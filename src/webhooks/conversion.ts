/**
 * The CRD conversion webhook of the in-cluster provider's pools (`apiextensions.k8s.io/v1` ConversionReview at
 * {@link CONVERSION_PATH}): every object of the request converted to `desiredAPIVersion` by
 * src/ipam/incluster-conversion.ts, in order. The uid is echoed. One object that cannot be converted fails the whole
 * review (`result.status: Failure` with a message naming it; the API server then fails the request that needed it),
 * as the API server expects. A body that is JSON but no readable ConversionReview gets a Failure answer too (with
 * whatever uid it carried), never an exception.
 */
import { CONVERSION_WEBHOOK_PATH } from "../../api/incluster/schema.js";
import { convertInClusterPool } from "../ipam/incluster-conversion.js";
import { isRecord } from "./admission.js";
import type { WebhookResult } from "../runtime/metrics.js";

/** Where the CRDs' `spec.conversion.webhook.clientConfig` points (the kubebuilder convention, the provider's too). */
export const CONVERSION_PATH = CONVERSION_WEBHOOK_PATH;

const REVIEW_API_VERSION = "apiextensions.k8s.io/v1";

/** What the listener sends back for a parsed body: HTTP code, JSON body, and how it ended for the metrics. */
export interface ReviewAnswer {
  code: number;
  body: unknown;
  result: WebhookResult;
}

function answer(uid: string, response: Record<string, unknown>, result: WebhookResult): ReviewAnswer {
  return {
    code: 200,
    body: { apiVersion: REVIEW_API_VERSION, kind: "ConversionReview", response: { uid, ...response } },
    result,
  };
}

function failed(uid: string, message: string, result: WebhookResult = "denied"): ReviewAnswer {
  return answer(uid, { convertedObjects: [], result: { status: "Failure", message } }, result);
}

/** A review that could not be converted in time (or at all, for want of room): a Failure counted as an error. */
export function conversionFailure(uid: string, message: string): ReviewAnswer {
  return failed(uid, message, "error");
}

/** Answers one parsed ConversionReview body; see the file header. Never throws. */
export function answerConversionReview(body: unknown): ReviewAnswer {
  const request = isRecord(body) && isRecord(body.request) ? body.request : undefined;
  const uid = typeof request?.uid === "string" ? request.uid : "";
  if (!isRecord(body) || body.kind !== "ConversionReview" || body.apiVersion !== REVIEW_API_VERSION) {
    return failed(uid, `not a ConversionReview of ${REVIEW_API_VERSION}`);
  }
  if (!request || uid === "") return failed(uid, "the ConversionReview has no request with a uid");
  const { desiredAPIVersion, objects } = request;
  if (typeof desiredAPIVersion !== "string") return failed(uid, "request.desiredAPIVersion is not a string");
  if (!Array.isArray(objects)) return failed(uid, "request.objects is not a list");
  const converted: unknown[] = [];
  for (const [index, object] of (objects as unknown[]).entries()) {
    const outcome = convertInClusterPool(object, desiredAPIVersion);
    if (!outcome.ok) return failed(uid, `request.objects[${index}]: ${outcome.message}`);
    converted.push(outcome.object);
  }
  return answer(uid, { convertedObjects: converted, result: { status: "Success" } }, "allowed");
}

/** The review handlers of other kinds than AdmissionReview, by path: the conversion webhook. */
export const REVIEWS: ReadonlyMap<string, (body: unknown) => ReviewAnswer> = new Map([
  [CONVERSION_PATH, answerConversionReview],
]);
