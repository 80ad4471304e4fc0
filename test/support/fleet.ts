/**
 * The bed of the rollout tests: a sandbox with the Memcached, ChartRevision and Rollout CRDs, the
 * operator started as `run` starts it (its flags as strings), a user's client, real kubectl, and
 * the reads every such test makes (the fleet, a Rollout's status, a revision pushed).
 */
import pino from 'pino'
import type { Test } from 'tap'
import { chartRevisionCRD } from '../../operator/api/chart-revision-crd.ts'
import { revisionName } from '../../operator/api/chart-revision.ts'
import { memcachedCRD } from '../../operator/api/crd.ts'
import { rolloutCRD } from '../../operator/api/rollout-crd.ts'
import type { KubeClient, KubeObject } from '../../operator/controller/client.ts'
import { runCli } from '../../operator/cli/program.ts'
import { startOperator, type Operator, type RunOptions } from '../../operator/cli/run.ts'
import { chartFromFiles, loadChart, readChartFiles } from '../../operator/render/chart.ts'
import { startSandbox, type Sandbox, type SandboxOptions } from '../../operator/sandbox/index.ts'
import { chartWith } from './chart.ts'
import { captureIO } from './io.ts'
import { kubectlFor, type Kubectl } from './kubectl.ts'
import { clientFor, eventually } from './operator.ts'

export const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
export const RO = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Rollout' } as const
export type Condition = { type: string; status: string; reason: string; message: string }
export type Cr = { metadata: { name: string; namespace: string; labels?: Record<string, string> }; spec: { chartRevision?: string }; status?: { chartRevision?: string; conditions?: Condition[] } }
export type RoStatus = { phase?: string; wave?: string; progress?: string; message?: string; members?: { memcached: string; state: string; from?: string; message?: string }[]; conditions?: Condition[] }

/** The operator's own chart, revision A of every rollout test. */
export const own = loadChart()
export const nameA = revisionName(own)
const values = readChartFiles(own.dir).get('values.yaml')!

/** A chart directory: the bundled chart with `from` replaced by `to` in values.yaml. */
export function valuesRevision(from: string, to: string): string {
  if (!values.includes(from)) throw new Error(`values.yaml has no ${JSON.stringify(from)}`)
  return chartWith({ 'values.yaml': values.replace(from, to) })
}

/** The name a chart directory has as a ChartRevision. */
export const revisionOf = (dir: string): string => revisionName(chartFromFiles(readChartFiles(dir), dir))

export interface FleetBed {
  sandbox: Sandbox
  user: KubeClient
  operator: Operator
  kubectl: Kubectl
  /** Every Memcached, by name. */
  fleet(): Promise<Cr[]>
  /** A Rollout's status ({} before the operator wrote one). */
  rollout(name: string): Promise<RoStatus>
  /** Waits for a Rollout's phase. */
  phase(name: string, want: string): Promise<true>
  /** `chart push DIR` (asserted to succeed); the revision's name. */
  push(dir: string): Promise<string>
  /** Creates N CRs `mc-0…` of size 1 in `default` and waits until every one runs A and is Ready. */
  createFleet(n: number): Promise<void>
}

/** Starts the bed; everything it started is torn down with `t`. `flags` are `run`'s, beside the defaults of these tests. */
export async function startFleetBed(t: Test, opts: { sandbox?: SandboxOptions; flags?: Partial<RunOptions> } = {}): Promise<FleetBed> {
  const sandbox = await startSandbox({ podReadyDelayMs: 10, ...opts.sandbox, installCRDs: [memcachedCRD(own), chartRevisionCRD(), rolloutCRD()] as unknown as KubeObject[] })
  t.teardown(() => sandbox.close())
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  const operator = await startOperator(
    { kubeconfig: sandbox.kubeconfigPath, namespace: [], concurrency: '4', resyncPeriod: '10m', leaderElectionId: 'x', metricsBindAddress: '0', healthProbeBindAddress: '0', rolloutPollMs: 100, ...opts.flags },
    captureIO(),
    pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
  )
  t.teardown(() => operator.stop())
  const fleet = async (): Promise<Cr[]> => ((await user.list(MC)).items as unknown as Cr[]).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
  const rollout = async (name: string): Promise<RoStatus> => ((await user.get({ ...RO, name })).status ?? {}) as RoStatus
  return {
    sandbox,
    user,
    operator,
    kubectl: kubectlFor(sandbox.kubeconfigPath),
    fleet,
    rollout,
    phase: (name, want) => eventually(`rollout ${name} ${want}`, async () => ((await rollout(name)).phase === want ? true : undefined), 60_000),
    async push(dir) {
      const io = captureIO()
      t.equal(await runCli(['chart', 'push', dir, '--kubeconfig', sandbox.kubeconfigPath], io), 0, io.err())
      return revisionOf(dir)
    },
    async createFleet(n) {
      for (let i = 0; i < n; i++) await user.create({ ...MC, metadata: { name: `mc-${i}`, namespace: 'default' }, spec: { size: 1 } })
      await eventually('the fleet runs A', async () => ((await fleet()).every((cr) => cr.status?.chartRevision === nameA && cr.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) ? true : undefined), 60_000)
    },
  }
}
