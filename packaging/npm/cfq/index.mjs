// The ES module face of index.js.
import cfq from './index.js';

export const { startEmulator, binaryPath, platformPackage } = cfq;
export default cfq;
