/**
 * Renewed Secrets loaded into running pods, without a restart. The chart declares what its pods
 * load (reload-plan.ts); the kubelet updates a mounted Secret in every pod by one atomic swap of
 * the volume's `..data` link, within its sync period. Then:
 * - a certificate: the operator connects to each ready pod's memcached over TLS, and while it
 *   serves another certificate than the Secret's, sends `refresh_certs` (tls.c), and connects again
 *   to see the new one served. memcached loads into the context it serves from: the chain, then
 *   the key, which must match it, or it keeps the new chain with its old key and completes no
 *   handshake. So a Secret whose key does not match its certificate is never asked for; a refresh
 *   that reads the chain before one kubelet swap and the key after it is refused and harmless (the
 *   chain it read is the one served: test/memcached-reload.test.ts); only a chain newer than the
 *   key breaks it, which takes two swaps during one refresh. Hence a renewed certificate is asked
 *   for only once the Secret has been unchanged for {@link RELOAD_SETTLE_MS} (longer than the
 *   kubelet takes to apply a change), and a refresh that broke the context all the same is
 *   reported, naming the pod and its remedy.
 * - an auth file (`-Y`): a sidecar of the pod sends memcached SIGHUP when the file changes
 *   (memcached.c reloads it then, keeping the old one if the new one is malformed); the operator
 *   sees the change in effect when the Secret's credentials are accepted.
 * Each pod is looked at once per Secret version: a resync of an unchanged cluster opens no
 * connection. The outcome is the CR's condition SecretsLoaded, and events.
 */
import type { Logger } from 'pino'
import type { KubeClient, KubeObject } from '../controller/client.ts'
import { Backoff } from '../controller/clock.ts'
import { describeProblem } from '../memcached/certificate.ts'
import { MemcachedConnection, MemcachedError, type MemcachedTarget } from '../memcached/connection.ts'
import type { ConditionInput } from './conditions.ts'
import type { EventRecorder } from './recorder.ts'
import { reloadPlanOf, type ReloadPlan } from './reload-plan.ts'
import type { SecretSummary } from './secrets.ts'
import type { Memcached } from '../api/memcached.ts'

/** The condition this step writes. */
export const SECRETS_LOADED = 'SecretsLoaded'
/** Its reasons, and the events'. */
export const RELOAD_REASONS = {
  Loaded: 'Loaded',
  Loading: 'Loading',
  NotLoaded: 'NotLoaded',
  CertificateInvalid: 'CertificateInvalid',
  ReloadFailed: 'ReloadFailed',
  PodUnreachable: 'PodUnreachable',
  InvalidReloadPlan: 'InvalidReloadPlan',
  NoReadyPods: 'NoReadyPods',
  CertificateReloaded: 'CertificateReloaded',
  PasswordsReloaded: 'PasswordsReloaded',
} as const

/** How soon a CR whose pods have not loaded a Secret yet is looked at again. */
export const RELOAD_RETRY_MS = 10_000
/**
 * The longest wait between two tries of a CR whose pods refuse the reload or cannot be reached:
 * the waits double from the retry period up to this (a failing item backs off, as in
 * controller-runtime), so a fleet whose memcached the operator cannot reach costs the API server
 * little. Waiting for the kubelet is not a failure and keeps the retry period.
 */
export const RELOAD_MAX_RETRY_MS = 5 * 60_000
/**
 * How long the kubelet may take to update a mounted Secret before it is reported as not loaded:
 * its sync period (1 min) plus its Secret cache's TTL (1 min by default), with margin.
 */
export const RELOAD_DEADLINE_MS = 5 * 60_000
/**
 * How long a TLS Secret must have been unchanged before memcached is asked to load it: more than
 * the kubelet takes to apply a change (its sync period and Secret cache TTL, a minute each at most
 * in practice), so that no second swap of the files can fall inside one refresh.
 */
export const RELOAD_SETTLE_MS = 90_000

/** A pod's address for memcached (default: its IP): tests map pods to processes on loopback. */
export type PodDialer = (pod: KubeObject, port: number) => { host: string; port: number }

export interface ReloaderDeps {
  client: KubeClient
  secrets: { get(namespace: string | undefined, name: string): SecretSummary | undefined }
  events: EventRecorder
  dial?: PodDialer
  /** How soon a CR whose pods have not loaded a Secret yet is looked at again (default {@link RELOAD_RETRY_MS}). */
  retryMs?: number
  /** Default {@link RELOAD_SETTLE_MS}. */
  settleMs?: number
  /** Counts a failure by reason (the reconcile failures metric), once per new warning. */
  failed?: (reason: string) => void
  now?: () => number
}

/** What one pod needs to show: the certificate's fingerprint, the auth Secret's checksum. */
interface Want {
  fingerprint?: string
  auth?: string
}
const wantKey = (w: Want): string => `${w.fingerprint ?? ''}|${w.auth ?? ''}`

/** The outcome for one pod. */
type PodOutcome =
  | { kind: 'loaded'; reloadedCert: boolean; reloadedAuth: boolean }
  | { kind: 'waiting'; what: string }
  | { kind: 'unreachable'; message: string }
  | { kind: 'failed'; message: string }

interface PodState {
  /** The {@link wantKey} this pod was last seen loaded at. */
  loaded?: string
  /** What it had loaded then. */
  want?: Want
}

/** The in-place reload of the Secrets a chart declares, per CR. */
export class Reloader {
  #d: ReloaderDeps
  #now: () => number
  #retryMs: number
  #settleMs: number
  /** By TLS Secret (`namespace/name`): its certificate's fingerprint, and since when the operator has seen it. */
  #seen = new Map<string, { fingerprint: string; since: number }>()
  /** By CR uid, then pod uid. */
  #pods = new Map<string, Map<string, PodState>>()
  /** By CR uid: since when its current {@link wantKey} has not been in effect everywhere. */
  #pendingSince = new Map<string, { key: string; since: number }>()
  /** By CR uid: the last warning recorded, so that a resync does not repeat it. */
  #warned = new Map<string, string>()
  /** By CR uid: its consecutive failed tries (ReloadFailed, PodUnreachable), while they last. */
  #failures = new Map<string, Backoff>()

  constructor(deps: ReloaderDeps) {
    this.#d = deps
    this.#now = deps.now ?? Date.now
    this.#retryMs = deps.retryMs ?? RELOAD_RETRY_MS
    this.#settleMs = deps.settleMs ?? RELOAD_SETTLE_MS
  }

  /** Forgets a CR (deleted). */
  forget(crUid: string): void {
    this.#pods.delete(crUid)
    this.#pendingSince.delete(crUid)
    this.#warned.delete(crUid)
    this.#failures.delete(crUid)
  }

  /** The wait before the next try of a CR whose try failed: doubling from the retry period. */
  #failedRetry(crUid: string): number {
    const backoff = this.#failures.get(crUid) ?? new Backoff({ initialMs: this.#retryMs, maxMs: Math.max(this.#retryMs, RELOAD_MAX_RETRY_MS), jitter: 0.1 })
    this.#failures.set(crUid, backoff)
    return backoff.next()
  }

  /**
   * Loads the declared Secrets into `pods` (the CR's pods, from the cache) where they serve another
   * version. Undefined when the workload declares nothing to reload.
   */
  async step(cr: Memcached, workload: KubeObject | undefined, pods: readonly KubeObject[], log: Logger): Promise<{ condition: ConditionInput; requeueAfterMs?: number } | undefined> {
    const crUid = cr.metadata.uid ?? ''
    const namespace = cr.metadata.namespace ?? 'default'
    let plan: ReloadPlan | undefined
    try {
      plan = reloadPlanOf(workload)
    } catch (err) {
      return { condition: await this.#warn(cr, log, RELOAD_REASONS.InvalidReloadPlan, err instanceof Error ? err.message : String(err)) }
    }
    if (!plan || (!plan.tls && !plan.authfile)) {
      this.forget(crUid)
      return undefined
    }
    const want: Want = {}
    const names: string[] = []
    let settleLeft = 0
    if (plan.tls) {
      const secret = this.#d.secrets.get(namespace, plan.tls.secretName)
      // A Secret not there yet (cert-manager issues it after the Certificate is applied): the render reports it.
      if (!secret?.tls) return undefined
      const cert = secret.tls
      if (cert.problem) {
        return { condition: await this.#warn(cr, log, RELOAD_REASONS.CertificateInvalid, `Secret ${namespace}/${plan.tls.secretName}: ${describeProblem(cert.problem)}; memcached would refuse it, so no pod is asked to load it and each keeps serving the certificate it has`) }
      }
      want.fingerprint = cert.fingerprint
      const key = `${namespace}/${plan.tls.secretName}`
      const seen = this.#seen.get(key)
      if (seen?.fingerprint !== cert.fingerprint) this.#seen.set(key, { fingerprint: cert.fingerprint ?? '', since: this.#now() })
      settleLeft = Math.max(0, (this.#seen.get(key)?.since ?? 0) + this.#settleMs - this.#now())
      names.push(`serves the certificate of Secret ${plan.tls.secretName} (serial ${cert.serial}, expires ${cert.notAfter})`)
    }
    if (plan.authfile) {
      const secret = this.#d.secrets.get(namespace, plan.authfile.secretName)
      if (!secret) return undefined
      want.auth = secret.checksum
      names.push(`accepts the passwords of Secret ${plan.authfile.secretName}`)
    }
    const key = wantKey(want)
    const states = this.#pods.get(crUid) ?? new Map<string, PodState>()
    this.#pods.set(crUid, states)
    const live = pods.filter((p) => !p.metadata.deletionTimestamp && podIP(p) && isReady(p))
    // Pods gone are forgotten.
    const uids = new Set(live.map((p) => p.metadata.uid ?? ''))
    for (const uid of states.keys()) if (!uids.has(uid)) states.delete(uid)
    const todo = live.filter((p) => states.get(p.metadata.uid ?? '')?.loaded !== key)
    const outcomes = new Map<string, PodOutcome>()
    if (todo.length > 0) {
      let material: Material
      try {
        material = await this.#material(namespace, plan)
      } catch (err) {
        return { condition: { type: SECRETS_LOADED, status: 'False', reason: RELOAD_REASONS.Loading, message: `reading the Secrets to connect to the pods: ${err instanceof Error ? err.message : String(err)}` }, requeueAfterMs: this.#retryMs }
      }
      // The pods at once: one that does not answer costs the connect timeout once, not per pod.
      const results = await Promise.all(todo.map((pod) => this.#loadInto(pod, plan!, want, states.get(pod.metadata.uid ?? '') ?? {}, material, settleLeft, log)))
      todo.forEach((pod, i) => {
        const outcome = results[i]!
        outcomes.set(pod.metadata.name ?? '', outcome)
        if (outcome.kind === 'loaded') states.set(pod.metadata.uid ?? '', { loaded: key, want })
      })
    }
    await this.#announce(cr, plan, outcomes)
    const failed = [...outcomes].filter(([, o]) => o.kind === 'failed') as [string, { message: string }][]
    if (failed.length > 0) {
      return { condition: await this.#warn(cr, log, RELOAD_REASONS.ReloadFailed, failed.map(([pod, o]) => `pod ${pod}: ${o.message}`).join('; ')), requeueAfterMs: this.#failedRetry(crUid) }
    }
    const unreachable = [...outcomes].filter(([, o]) => o.kind === 'unreachable') as [string, { message: string }][]
    if (unreachable.length > 0) {
      const message = `${unreachable.map(([pod, o]) => `pod ${pod}: ${o.message}`).join('; ')} (the operator reaches memcached's port on each pod: a NetworkPolicy must admit it)`
      return { condition: await this.#warn(cr, log, RELOAD_REASONS.PodUnreachable, message), requeueAfterMs: this.#failedRetry(crUid) }
    }
    this.#failures.delete(crUid)
    const waiting = [...outcomes].filter(([, o]) => o.kind === 'waiting') as [string, { what: string }][]
    if (waiting.length > 0) {
      const pending = this.#pendingSince.get(crUid)
      const since = pending?.key === key ? pending.since : this.#now()
      this.#pendingSince.set(crUid, { key, since })
      const what = waiting.map(([pod, o]) => `pod ${pod} ${o.what}`).join('; ')
      if (this.#now() - since >= RELOAD_DEADLINE_MS) {
        return { condition: await this.#warn(cr, log, RELOAD_REASONS.NotLoaded, `after ${Math.round((this.#now() - since) / 1000)} s, ${what}: the kubelet has not updated the mounted Secret, or the pod's reloader sidecar is not running`), requeueAfterMs: this.#retryMs }
      }
      if (settleLeft > 0) return { condition: { type: SECRETS_LOADED, status: 'False', reason: RELOAD_REASONS.Loading, message: `${what}: the certificate is loaded once the Secret has been unchanged for ${Math.round(this.#settleMs / 1000)} s, as long as the kubelet may take to update the files (${Math.ceil(settleLeft / 1000)} s left)` }, requeueAfterMs: settleLeft }
      return { condition: { type: SECRETS_LOADED, status: 'False', reason: RELOAD_REASONS.Loading, message: `${what}: waiting for the kubelet to update the mounted Secret (within its sync period, about a minute)` }, requeueAfterMs: this.#retryMs }
    }
    this.#pendingSince.delete(crUid)
    this.#warned.delete(crUid)
    if (live.length === 0) return { condition: { type: SECRETS_LOADED, status: 'Unknown', reason: RELOAD_REASONS.NoReadyPods, message: 'no pod is ready: each is looked at once it is' } }
    return { condition: { type: SECRETS_LOADED, status: 'True', reason: RELOAD_REASONS.Loaded, message: `every ready pod (${live.length}) ${names.join(' and ')}` } }
  }

  /** How to reach a pod's memcached (TLS material and credentials read from the Secrets): for resize.ts's cache_memlimit. */
  async targetFor(namespace: string, plan: ReloadPlan, pod: KubeObject): Promise<MemcachedTarget> {
    const material = await this.#material(namespace, plan)
    const address = (this.#d.dial ?? ((p, port) => ({ host: podIP(p)!, port })))(pod, plan.port)
    return { ...address, ...(plan.tls ? { tls: material.clientCertificate ?? {} } : {}), ...(material.credentials ? { credentials: material.credentials } : {}) }
  }

  /** Brings one pod to `want`. */
  async #loadInto(pod: KubeObject, plan: ReloadPlan, want: Want, state: PodState, material: Material, settleLeft: number, log: Logger): Promise<PodOutcome> {
    const address = (this.#d.dial ?? ((p, port) => ({ host: podIP(p)!, port })))(pod, plan.port)
    const target: MemcachedTarget = { ...address, ...(plan.tls ? { tls: material.clientCertificate ?? {} } : {}), ...(material.credentials ? { credentials: material.credentials } : {}) }
    const where = `${address.host}:${address.port}`
    let conn: MemcachedConnection
    try {
      conn = await MemcachedConnection.open(target)
    } catch (err) {
      const e = err as MemcachedError
      // Refused credentials: the pod still has the previous auth file.
      if (e.stage === 'auth') return { kind: 'waiting', what: 'refuses the new passwords (the auth file is not reloaded yet)' }
      return { kind: 'unreachable', message: `${where}: ${e.message}` }
    }
    const reloadedAuth = want.auth !== undefined && state.want !== undefined && state.want.auth !== want.auth
    try {
      if (!plan.tls || conn.served() === want.fingerprint) return { kind: 'loaded', reloadedCert: false, reloadedAuth }
      if (settleLeft > 0) return { kind: 'waiting', what: 'serves the previous certificate' }
      const answer = await conn.command('refresh_certs')
      conn.close()
      let after: MemcachedConnection
      try {
        after = await MemcachedConnection.open(target)
      } catch (err) {
        if (answer === 'OK') return { kind: 'unreachable', message: `${where}: ${(err as Error).message}` }
        // memcached took a newer chain than its key: it completes no handshake any more, and no refresh can reach it.
        log.error({ pod: pod.metadata.name, answer }, 'refresh_certs failed half-way: memcached serves no TLS')
        return { kind: 'failed', message: `memcached answered refresh_certs with ${JSON.stringify(answer)} and completes no TLS handshake since (its files changed during the refresh); restart it from the Secret's files: kubectl delete pod ${pod.metadata.name} -n ${pod.metadata.namespace ?? 'default'}` }
      }
      const served = after.served()
      after.close()
      if (served === want.fingerprint) {
        log.info({ pod: pod.metadata.name, fingerprint: served }, 'certificate reloaded in place')
        return { kind: 'loaded', reloadedCert: true, reloadedAuth }
      }
      if (answer !== 'OK') return { kind: 'failed', message: `memcached refused the certificate files: ${answer}; it still serves its previous certificate` }
      return { kind: 'waiting', what: 'still has the previous certificate in its files' }
    } catch (err) {
      return { kind: 'unreachable', message: `${where}: ${err instanceof Error ? err.message : String(err)}` }
    } finally {
      conn.close()
    }
  }

  /** The client certificate and credentials the pods ask for, read from the Secrets (never kept). */
  async #material(namespace: string, plan: ReloadPlan): Promise<Material> {
    const material: Material = {}
    if (plan.tls?.clientCertificate) {
      const data = await this.#secretData(namespace, plan.tls.secretName)
      const cert = data['tls.crt']
      const key = data['tls.key']
      if (cert && key) material.clientCertificate = { cert, key }
    }
    if (plan.authfile) {
      const lines = (await this.#secretData(namespace, plan.authfile.secretName))[plan.authfile.key]?.toString('utf8') ?? ''
      const line = lines.split(/\r?\n/).find((l) => l.includes(':'))
      if (!line) throw new Error(`Secret ${namespace}/${plan.authfile.secretName} has no user:password line in ${plan.authfile.key}`)
      const i = line.indexOf(':')
      material.credentials = { user: line.slice(0, i), password: line.slice(i + 1) }
    }
    return material
  }

  async #secretData(namespace: string, name: string): Promise<Record<string, Buffer>> {
    const secret = (await this.#d.client.get({ apiVersion: 'v1', kind: 'Secret', namespace, name })) as KubeObject & { data?: Record<string, string> }
    return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]))
  }

  /** Normal events for what was loaded in place. */
  async #announce(cr: Memcached, plan: ReloadPlan, outcomes: ReadonlyMap<string, PodOutcome>): Promise<void> {
    const certs: string[] = []
    const auths: string[] = []
    for (const [pod, o] of outcomes) {
      if (o.kind !== 'loaded') continue
      if (o.reloadedCert) certs.push(pod)
      if (o.reloadedAuth) auths.push(pod)
    }
    if (certs.length > 0) await this.#d.events.record(cr, 'Normal', RELOAD_REASONS.CertificateReloaded, `memcached loaded the certificate of Secret ${plan.tls!.secretName} in place (refresh_certs) on ${certs.sort().join(', ')}; no pod restarted`, 'Reload')
    if (auths.length > 0) await this.#d.events.record(cr, 'Normal', RELOAD_REASONS.PasswordsReloaded, `memcached reloaded the auth file of Secret ${plan.authfile!.secretName} in place (SIGHUP) on ${auths.sort().join(', ')}; no pod restarted`, 'Reload')
  }

  /** A False condition, with a Warning event, a log line and the metric when it says something new. */
  async #warn(cr: Memcached, log: Logger, reason: string, message: string): Promise<ConditionInput> {
    const uid = cr.metadata.uid ?? ''
    if (this.#warned.get(uid) !== `${reason}:${message}`) {
      this.#warned.set(uid, `${reason}:${message}`)
      log.warn({ reason, err: message }, 'renewed Secrets not loaded')
      this.#d.failed?.(reason)
      await this.#d.events.record(cr, 'Warning', reason, message, 'Reload')
    }
    return { type: SECRETS_LOADED, status: 'False', reason, message }
  }
}

interface Material {
  clientCertificate?: { cert: Buffer; key: Buffer }
  credentials?: { user: string; password: string }
}

function podIP(pod: KubeObject): string | undefined {
  return (pod.status as { podIP?: string } | undefined)?.podIP
}

function isReady(pod: KubeObject): boolean {
  const conditions = (pod.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions
  return conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false
}
