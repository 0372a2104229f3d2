/**
 * The machine a bench ran on, as the figures need it read: how much of its CPU time the hypervisor took (steal) and how
 * busy it already was when the run began. Figures of a contended machine are not comparable with a quiet one's: the
 * same code reads slower and costlier, in every process at once, so the report says so next to them.
 */
import { readFileSync } from "node:fs";
import type { Section } from "./table.js";

/** The whole machine's CPU time from /proc/stat's first line, in clock ticks since boot. */
export interface CpuTimes {
  /** Every state summed (guest time is already part of user time, so left out). */
  total: number;
  idle: number;
  /** Time the hypervisor ran someone else while this machine had work. */
  steal: number;
}

/** Share of the run's CPU time the hypervisor took above which the report warns. */
export const STEAL_WARNING = 0.02;
/** One-minute load average per CPU at the start above which the report warns. */
export const LOAD_WARNING = 0.5;

/** The `cpu` line of /proc/stat, or undefined when `text` has none (pure). */
export function parseCpuTimes(text: string): CpuTimes | undefined {
  const line = text.split("\n").find((l) => l.startsWith("cpu "));
  if (!line) return undefined;
  // user nice system idle iowait irq softirq steal guest guest_nice
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (ticks.length < 8 || ticks.some((t) => !Number.isFinite(t))) return undefined;
  const [, , , idle = 0, iowait = 0, , , steal = 0] = ticks;
  return { total: ticks.reduce((a, b) => a + b, 0), idle: idle + iowait, steal };
}

/** This machine's CPU times now; undefined where there is no /proc/stat. */
export function readCpuTimes(): CpuTimes | undefined {
  try {
    return parseCpuTimes(readFileSync("/proc/stat", "utf8"));
  } catch {
    return undefined;
  }
}

/** What the report says of the machine over a run. */
export interface MachineReading {
  cpus: number;
  loadAverageAtStart: number[];
  /** Share of the run's CPU time the hypervisor took; undefined without /proc/stat. */
  stealShare?: number;
  /** Share of the run's CPU time spent busy (not idle, not stolen), by every process of the machine. */
  busyShare?: number;
}

/** The reading between two samples of the CPU times (pure). */
export function machineReading(
  cpus: number,
  loadAverageAtStart: number[],
  start: CpuTimes | undefined,
  end: CpuTimes | undefined,
): MachineReading {
  const reading: MachineReading = { cpus, loadAverageAtStart };
  const total = start && end ? end.total - start.total : 0;
  if (start && end && total > 0) {
    reading.stealShare = (end.steal - start.steal) / total;
    reading.busyShare = (total - (end.idle - start.idle) - (end.steal - start.steal)) / total;
  }
  return reading;
}

const percent = (share: number): string => `${(share * 100).toFixed(1)}%`;

/** The report's first section: the machine, with a warning where its figures are not a quiet machine's (pure). */
export function machineSection(m: MachineReading): Section {
  const load = m.loadAverageAtStart[0] ?? 0;
  const warnings = [
    ...(m.stealShare !== undefined && m.stealShare > STEAL_WARNING
      ? [`the hypervisor took ${percent(m.stealShare)} of the CPU time`]
      : []),
    ...(load / m.cpus > LOAD_WARNING ? [`the machine was busy at the start (load ${load.toFixed(2)})`] : []),
  ];
  return {
    title: "0. Machine",
    rows: [
      {
        metric: "CPUs; load average at the start (1, 5, 15 min)",
        value: `${m.cpus}; ${m.loadAverageAtStart.map((l) => l.toFixed(2)).join(", ")}`,
      },
      {
        metric: "CPU time over the run: busy (every process), stolen",
        value:
          m.stealShare === undefined || m.busyShare === undefined
            ? "-"
            : `${percent(m.busyShare)}, ${percent(m.stealShare)}`,
        detail: m.stealShare === undefined ? "no /proc/stat" : undefined,
      },
      {
        metric: "comparable with a quiet machine's figures",
        value: warnings.length === 0 ? "yes" : "NO",
        detail: warnings.length === 0 ? undefined : `${warnings.join("; ")}: compare ratios within this run only`,
      },
    ],
  };
}
