/**
 * The API server's access reviews behind {@link AccessReviewer}: a TokenReview says whose a bearer token is, a
 * SubjectAccessReview whether that user may read a non-resource URL. Both are creates that the API server answers in
 * their status and stores nowhere.
 */
import type { Kube } from "../kube/access.js";
import { ResourceClient, type KubeObject } from "../kube/resource.js";
import type { AccessReviewer, ReviewedUser } from "./scrapeauth.js";

/** RBAC of the reviews (see src/rbac.ts): the diagnostics endpoint asks the API server who calls it and what it may. */
export const ACCESS_REVIEW_RULES = [
  { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
  { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
];

/** A scrape waits this long at most for each review; the API server answers them from memory. */
const REVIEW_TIMEOUT_MS = 10_000;

interface TokenReview extends KubeObject {
  spec: { token: string };
  status?: { authenticated?: boolean; user?: ReviewedUser; error?: string };
}

interface SubjectAccessReview extends KubeObject {
  spec: {
    user: string;
    uid?: string;
    groups?: string[];
    extra?: Record<string, string[]>;
    nonResourceAttributes: { path: string; verb: string };
  };
  status?: { allowed?: boolean };
}

/** Reviews through the API server `kube` talks to, as the identity `kube` holds (it needs ACCESS_REVIEW_RULES). */
export function kubeAccessReviewer(kube: Kube): AccessReviewer {
  const options = { requestTimeoutMs: REVIEW_TIMEOUT_MS };
  const tokenReviews = new ResourceClient<TokenReview>(
    kube,
    { group: "authentication.k8s.io", version: "v1", plural: "tokenreviews", kind: "TokenReview", namespaced: false },
    options,
  );
  const accessReviews = new ResourceClient<SubjectAccessReview>(
    kube,
    {
      group: "authorization.k8s.io",
      version: "v1",
      plural: "subjectaccessreviews",
      kind: "SubjectAccessReview",
      namespaced: false,
    },
    options,
  );
  return {
    async authenticate(token) {
      const review = await tokenReviews.create("", { metadata: {}, spec: { token } });
      const user = review.status?.user;
      return review.status?.authenticated === true && user?.username ? user : undefined;
    },
    async authorize(user, path, verb) {
      const review = await accessReviews.create("", {
        metadata: {},
        spec: {
          user: user.username,
          ...(user.uid !== undefined ? { uid: user.uid } : {}),
          ...(user.groups !== undefined ? { groups: user.groups } : {}),
          ...(user.extra !== undefined ? { extra: user.extra } : {}),
          nonResourceAttributes: { path, verb },
        },
      });
      return review.status?.allowed === true;
    },
  };
}
