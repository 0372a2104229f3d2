/** What every webhook route is and gets: the contract between the server (http.ts) and the handlers. */
import type { Logger } from "../runtime/logger.js";
import type { AdmissionRequest, AdmissionResponse } from "./admission.js";
import type { EndpointReads } from "./endpointreads.js";
import type { ClusterLookup } from "./lookup.js";
import type { Validator } from "./offload.js";

/** What handlers may use besides the request. */
export interface HandlerContext {
  lookup: ClusterLookup;
  /** What the control-plane endpoint guard reads (endpointreads.ts); its reviews are refused with 500 without it. */
  endpoints?: EndpointReads;
  logger: Logger;
  /** Where the pools' validation jobs run; default the request's thread (offload.ts). */
  validator?: Validator;
  /**
   * When the answer to this request is due (`performance.now()` milliseconds): the HTTP layer answers with a refusal
   * then, whatever the handler still does, so reads and jobs need not outlive it. Unset: no deadline (tests).
   */
  deadline?: number;
}

/** One webhook: the kind it accepts and how it answers. */
export interface Route {
  kind: string;
  handle(request: AdmissionRequest, ctx: HandlerContext): Promise<AdmissionResponse>;
}
