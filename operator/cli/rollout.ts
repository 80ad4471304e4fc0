/**
 * `memcached-operator rollout pause|resume|abort|status NAME`: the controls of a Rollout
 * (api/rollout-crd.ts; docs/fleet.md) from the command line. They write the same spec fields a
 * person writes with kubectl (`spec.paused`, `spec.abort`) with a merge patch, and `status` prints
 * what the operator reports.
 */
import { isNotFound, KubeClient, type KubeObject } from '../controller/client.ts'
import { ROLLOUT_API_VERSION, ROLLOUT_KIND, type Rollout } from '../api/rollout-crd.ts'
import { InputError, packageVersion, type CliIO } from './io.ts'
import { loadKubeConfig } from './kubeconfig.ts'

export interface RolloutOptions {
  kubeconfig?: string
  context?: string
}

const REF = { apiVersion: ROLLOUT_API_VERSION, kind: ROLLOUT_KIND }

function clientOf(opts: RolloutOptions, io: CliIO): KubeClient {
  return new KubeClient(loadKubeConfig(opts.kubeconfig, io, opts.context), { userAgent: `memcached-operator-rollout-cli/${packageVersion()}` })
}

/** A refused request as one line. */
function failure(err: unknown, name: string): InputError {
  if (isNotFound(err)) {
    const kind = (err as { details?: { kind?: string } }).details?.kind
    return new InputError(kind === undefined ? 'the cluster does not serve Rollouts: install their CRD (kubectl apply -k kustomize/crd)' : `Rollout ${JSON.stringify(name)} does not exist (kubectl get rollouts)`)
  }
  return new InputError(err instanceof Error ? err.message : String(err))
}

const ACTIONS = {
  pause: { patch: { spec: { paused: true } }, said: 'paused: no Memcached is moved until it is resumed' },
  resume: { patch: { spec: { paused: false } }, said: 'resumed' },
  abort: { patch: { spec: { abort: true } }, said: 'aborted: its current wave returns to its previous revisions' },
} as const

/** Runs `rollout pause|resume|abort NAME`. */
export async function runRolloutControl(action: keyof typeof ACTIONS, name: string, opts: RolloutOptions, io: CliIO): Promise<number> {
  const client = clientOf(opts, io)
  try {
    const ro = (await client.get({ ...REF, name })) as unknown as Rollout
    const phase = ro.status?.phase
    if (phase === 'Succeeded' || phase === 'Halted' || phase === 'Aborted' || phase === 'Failed') throw new InputError(`Rollout ${JSON.stringify(name)} has ended (${phase}): create another Rollout to move the fleet again`)
    await client.patch({ ...REF, name }, ACTIONS[action].patch, { type: 'merge' })
    io.stdout(`rollout.cache.example.com/${name} ${ACTIONS[action].said}\n`)
    return 0
  } catch (err) {
    if (err instanceof InputError) throw err
    throw failure(err, name)
  } finally {
    client.close()
  }
}

/** The status of a Rollout as text. */
export function statusText(ro: Rollout): string {
  const s = ro.status ?? {}
  const lines = [`Rollout ${ro.metadata.name} to ${ro.spec.revision}: ${s.phase ?? 'Pending'}${ro.spec.paused ? ' (spec.paused)' : ''}`]
  lines.push(`  wave ${s.wave ?? '-'}, ${s.progress ?? '0/?'} Memcacheds updated and healthy`)
  if (s.message) lines.push(`  ${s.message}`)
  if (s.plan) lines.push(`  plan: ${Object.entries(s.plan).map(([c, n]) => `${c} ${n}`).join(', ')}`)
  for (const m of s.members ?? []) lines.push(`  ${m.memcached}  ${m.state}${m.from !== undefined ? ` (from ${m.from})` : ''}${m.message ? `: ${m.message}` : ''}`)
  for (const h of s.held ?? []) lines.push(`  held ${h.memcached}: ${h.reason}`)
  return `${lines.join('\n')}\n`
}

/** Runs `rollout status NAME`: exit 0 while it progresses or when it succeeded, 1 when it halted, was aborted or failed. */
export async function runRolloutStatus(name: string, opts: RolloutOptions & { output?: string }, io: CliIO): Promise<number> {
  const client = clientOf(opts, io)
  try {
    const ro = (await client.get({ ...REF, name })) as unknown as Rollout & KubeObject
    io.stdout(opts.output === 'json' ? `${JSON.stringify(ro.status ?? {}, null, 2)}\n` : statusText(ro))
    const phase = ro.status?.phase
    return phase === 'Halted' || phase === 'Aborted' || phase === 'Failed' ? 1 : 0
  } catch (err) {
    throw failure(err, name)
  } finally {
    client.close()
  }
}
