/** Mocha root hooks: the shared local plane is stopped once, after every suite of the run. */
import { stopSharedCluster } from "./cluster.js";

export const mochaHooks = {
  async afterAll(): Promise<void> {
    await stopSharedCluster();
  },
};
