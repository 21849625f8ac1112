/** The host uid/gid range a sandbox's user namespace maps container ids 0.. onto. */
export interface UidRange {
  /** First host uid/gid of the range; container uid 0 maps to it. */
  hostStart: number;
  size: number;
}
