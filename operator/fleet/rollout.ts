/**
 * The rollout controller: drives each Rollout (api/rollout-crd.ts) wave by wave, through the
 * interface docs/fleet.md gives a rollout — it moves a Memcached by writing spec.chartRevision
 * with server-side apply under its own field manager, knows it healthy from status.chartRevision,
 * status.observedGeneration and the Ready and Available conditions, plans a CR again just before it
 * moves it and holds it unless the change is still the one planned, returns a failed wave by
 * writing the previous revisions back, and at the end promotes the target and removes its pins.
 *
 * The state lives in the Rollout's status (the current wave, its CRs, what each ran before), so a
 * new leader carries on where the last one stopped; the plan made when the rollout started is kept
 * in memory only (a new leader plans again, and compares with that). One Rollout progresses at a
 * time: a younger one waits as Pending. Runs in the leader only, in an operator that watches the
 * whole cluster (no --namespace, no --selector): a rollout moves the whole fleet.
 */
import type { Logger } from 'pino'
import { API_VERSION, KIND, type Condition, type Memcached } from '../api/memcached.ts'
import { ROLLOUT_API_VERSION, ROLLOUT_KIND, type Rollout, type RolloutPhase, type RolloutStatus, type WaveMember } from '../api/rollout-crd.ts'
import { isConflict, isNotFound, type KubeClient, type KubeObject } from '../controller/client.ts'
import { detectPlatform } from '../controller/platform.ts'
import type { Chart } from '../render/chart.ts'
import { CHART_LABEL, DEFAULT_LABEL, PROMOTED_AT, REVISION_API_VERSION, REVISION_KIND } from '../api/chart-revision.ts'
import { setCondition, type ConditionInput } from '../reconcile/conditions.ts'
import { observedOf, stillAsPlanned, type PlannedCr } from './plan.ts'
import { planFleet } from './rollout-plan.ts'
import { whyPodsFail } from './rollout-pods.ts'
import { budgetWait, crKey, countWaves, health, personPin, pinOf, pinOwners, ROLLOUT_MANAGER, settingsOf, takeWave, type FleetCr, type RolloutSettings } from './rollout-waves.ts'

const TERMINAL: readonly RolloutPhase[] = ['Succeeded', 'Halted', 'Aborted', 'Failed']
const RO = { apiVersion: ROLLOUT_API_VERSION, kind: ROLLOUT_KIND }
const MC = { apiVersion: API_VERSION, kind: KIND }
const REV = { apiVersion: REVISION_API_VERSION, kind: REVISION_KIND }
/** The failing CRs of a wave whose pods a halt reads and names (rollout-pods.ts). */
const CRS_NAMED = 3

/**
 * Why a CR must be held rather than moved: its fresh plan against the one the rollout started
 * with (fleet/plan.ts stillAsPlanned), the class included; a change that would not apply
 * (invalid, conflict, error) is held whatever was planned.
 */
export function holdReasons(planned: PlannedCr | undefined, now: PlannedCr): string[] {
  if (now.class === 'invalid' || now.class === 'conflict' || now.class === 'error') return [`its change is ${now.class}: ${now.error ?? now.objects.filter((o) => o.action === 'conflict').map((o) => `${o.kind} ${o.name}: ${o.reason ?? 'conflict'}`).join('; ')}`]
  if (planned === undefined) return ['it was not in the plan the rollout started with (created since)']
  const why = stillAsPlanned(planned, observedOf(now))
  if (now.class !== planned.class) why.unshift(`its change is now ${now.class}, planned ${planned.class}`)
  return why
}

/** The revisions the operator renders with (reconcile/revision.ts ChartRevisions). */
export interface RevisionSource {
  resolve(cr: { spec?: unknown }): { chart: Chart; revision: string }
  defaultRevision(): { name: string }
}

export interface RolloutControllerOptions {
  client: KubeClient
  revisions: RevisionSource
  /** The operator's own chart: the kinds it watches and prunes over. */
  own: () => Chart
  log: Logger
  /**
   * How often Rollouts are looked at (default 2 s): a rollout is driven by time (deadlines, bake)
   * as much as by events. A change of a Memcached ({@link RolloutController.kick}) brings the next
   * pass forward.
   */
  pollMs?: number
  /** The least time between the end of a pass and a pass brought forward by a kick (default 200 ms). */
  kickMs?: number
  platform?: string
  now?: () => Date
  /**
   * The Memcacheds as the operator's informer caches them (with the owners of spec.chartRevision
   * kept of their managedFields: reconcile/cache-summary.ts), read instead of a list of the whole
   * fleet at every pass. Absent: a list per pass.
   */
  memcacheds?: () => (FleetCr & Memcached)[]
}

/** Drives the Rollouts of the cluster. */
export class RolloutController {
  #o: RolloutControllerOptions
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #stopped = false
  /** When the next pass is due (ms since the epoch), while one is scheduled. */
  #due: number | undefined
  /** When the last pass ended. */
  #lastEnd = 0
  /** A kick came while a pass ran: the next one is brought forward once it ends. */
  #kicked = false
  /**
   * The last pass found a Rollout that has not ended. Only then do kicks bring passes forward: with
   * no rollout in progress a Memcached's change moves nothing, and a fleet converging would
   * otherwise draw a list of Rollouts every `kickMs`. A new Rollout is found at the next poll.
   */
  #inProgress = false
  /** The pass asks to be run again at this time (a bake's end), if before the next poll. */
  #wakeAt: number | undefined
  #platform: string | undefined
  /** The plan each Rollout started with, by its uid, then by `namespace/name`. */
  #plans = new Map<string, Map<string, PlannedCr>>()

  constructor(opts: RolloutControllerOptions) {
    this.#o = opts
    if (opts.platform !== undefined) this.#platform = opts.platform
  }

  #now(): Date {
    return this.#o.now?.() ?? new Date()
  }

  /** Starts looking at Rollouts every pollMs, and sooner when {@link kick}ed. */
  start(): void {
    this.#pass()
  }

  #pass(): void {
    this.#due = undefined
    if (this.#stopped) return
    this.#kicked = false
    this.#wakeAt = undefined
    this.#running = this.tick()
      .catch((err: unknown) => this.#o.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'rollouts: a pass failed; retrying'))
      .finally(() => {
        this.#running = undefined
        this.#lastEnd = Date.now()
        const poll = this.#o.pollMs ?? 2000
        const kick = this.#o.kickMs ?? 200
        // (The bake's end is on the rollout's clock, `now`; never sooner than a kick's spacing.)
        this.#schedule(this.#kicked && this.#inProgress ? kick : Math.min(poll, Math.max(kick, (this.#wakeAt ?? Infinity) - this.#now().getTime())))
      })
  }

  /** Schedules the next pass `ms` from now, unless one is due sooner. */
  #schedule(ms: number): void {
    if (this.#stopped) return
    const at = Date.now() + ms
    if (this.#due !== undefined && this.#due <= at) return
    if (this.#timer) clearTimeout(this.#timer)
    this.#due = at
    this.#timer = setTimeout(() => this.#pass(), ms)
  }

  /**
   * Something a rollout waits on changed (a Memcached's status, as the operator's informer sees
   * it): the next pass comes at most `kickMs` after the last one ended, not at the next poll, so
   * that each step of a wave follows the fleet's own pace. Kicks while a pass runs bring one pass
   * forward after it; the polls go on for what time alone moves (deadlines, bake).
   */
  kick(): void {
    if (this.#stopped || (this.#due === undefined && this.#running === undefined)) return
    if (this.#running !== undefined) {
      // (Whether it counts is known when the pass ends: it may find a rollout.)
      this.#kicked = true
      return
    }
    if (!this.#inProgress) return
    this.#schedule(Math.max(0, this.#lastEnd + (this.#o.kickMs ?? 200) - Date.now()))
  }

  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    await this.#running
  }

  /** One pass: the oldest Rollout that is not done progresses; younger ones wait. */
  async tick(): Promise<void> {
    let rollouts: Rollout[]
    try {
      rollouts = (await this.#o.client.list(RO)).items as unknown as Rollout[]
    } catch (err) {
      if (isNotFound(err)) {
        this.#inProgress = false
        return // the CRD is not installed: no rollout to drive
      }
      throw err
    }
    this.#inProgress = rollouts.some((ro) => !TERMINAL.includes(ro.status?.phase as RolloutPhase))
    rollouts.sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || a.metadata.name.localeCompare(b.metadata.name))
    let active: Rollout | undefined
    for (const ro of rollouts) {
      if (TERMINAL.includes(ro.status?.phase as RolloutPhase)) {
        this.#plans.delete(ro.metadata.uid ?? '')
        continue
      }
      if (active === undefined) {
        active = ro
        await this.reconcile(ro)
      } else await this.#write(ro, { ...(ro.status ?? {}), phase: 'Pending', message: `waits for Rollout ${active.metadata.name} to end` })
    }
  }

  /** Moves one Rollout as far as it can go now. */
  async reconcile(ro: Rollout): Promise<void> {
    const st: RolloutStatus = structuredClone(ro.status ?? {})
    st.observedGeneration = ro.metadata.generation ?? 0
    let settings: RolloutSettings
    try {
      settings = settingsOf(ro.spec)
    } catch (err) {
      return this.#end(ro, st, 'Failed', 'InvalidSpec', (err as Error).message)
    }
    const crs = this.#o.memcacheds?.() ?? ((await this.#o.client.list<KubeObject & Memcached>(MC)).items as unknown as (FleetCr & Memcached)[])
    const byKey = new Map(crs.map((cr) => [crKey(cr), cr]))
    if (ro.spec.abort) {
      await this.#returnWave(st, byKey, 'the rollout was aborted')
      return this.#end(ro, st, 'Aborted', 'Aborted', `aborted in wave ${st.wave ?? '-'}; its Memcacheds were returned to their previous revisions`)
    }
    const target = ro.spec.revision
    let chart: Chart
    try {
      chart = this.#o.revisions.resolve({ spec: { chartRevision: target } }).chart
    } catch (err) {
      return this.#end(ro, st, 'Failed', 'RevisionUnavailable', (err as Error).message)
    }
    let plan = this.#plans.get(ro.metadata.uid ?? '')
    if (st.phase === undefined || st.phase === 'Pending' || plan === undefined) {
      const fresh = await this.#plan(chart, crs.filter((cr) => personPin(cr) === undefined))
      this.#plans.set(ro.metadata.uid ?? '', fresh)
      plan = fresh
      if (st.phase === undefined || st.phase === 'Pending') {
        st.plan = {}
        for (const p of fresh.values()) st.plan[p.class] = (st.plan[p.class] ?? 0) + 1
        st.held = crs.filter((cr) => personPin(cr) !== undefined).map((cr) => ({ memcached: crKey(cr), reason: `pinned to ${pinOf(cr)} by ${personPin(cr)}` }))
        st.total = crs.length
        st.currentWave = 0
        st.waveCount = countWaves(settings.waves, crs)
        st.members = []
        this.#setPhase(st, 'Progressing', 'Started', `moving ${crs.length} Memcacheds to ${target} in ${st.waveCount} waves`)
        await this.#event(ro, 'Normal', 'Started', st.message!)
      }
    }
    // The waves counted when the rollout started, and one more for CRs created since that no wave takes.
    let waves = Math.max(st.waveCount ?? countWaves(settings.waves, crs), st.currentWave ?? 0)
    if (ro.spec.paused) {
      if (st.phase !== 'Paused') await this.#event(ro, 'Normal', 'Paused', 'paused: no Memcached is moved until spec.paused is false')
      this.#setPhase(st, 'Paused', 'Paused', 'paused (spec.paused): no Memcached is moved')
      return this.#write(ro, this.#counted(st, crs, target, waves))
    }
    if (st.phase === 'Paused') {
      this.#setPhase(st, 'Progressing', 'Resumed', 'resumed')
      await this.#event(ro, 'Normal', 'Resumed', 'resumed')
    }
    const now = this.#now()
    for (;;) {
      const wave = st.currentWave ?? 0
      if ((st.members ?? []).length === 0) {
        const heldKeys = new Set((st.held ?? []).map((h) => h.memcached))
        const candidates = crs.filter((cr) => !heldKeys.has(crKey(cr)) && personPin(cr) === undefined && !(pinOf(cr) === target && pinOwners(cr).includes(ROLLOUT_MANAGER)))
        if (candidates.length === 0) return this.#finish(ro, st, crs, target, waves)
        st.members = takeWave(settings.waves, wave, candidates, st.total ?? crs.length).map((cr) => ({ memcached: crKey(cr), state: 'pending' as const }))
        if (st.members.length === 0) {
          st.currentWave = wave + 1
          continue
        }
        waves = Math.max(waves, wave + 1)
        await this.#event(ro, 'Normal', 'WaveStarted', `wave ${wave + 1}/${waves}: ${st.members.length} Memcacheds`)
      }
      break
    }
    const members = st.members!
    // The gate: every CR moved must be healthy on the target within the deadline.
    const failed: { m: WaveMember; cr: FleetCr & Memcached }[] = []
    const budgets = new Set<string>()
    for (const m of members.filter((x) => x.state === 'moving' || x.state === 'updated')) {
      const cr = byKey.get(m.memcached)
      if (cr === undefined) {
        m.state = 'held'
        m.message = 'deleted during the rollout'
        continue
      }
      const h = health(cr, target)
      if (h.healthy) {
        m.state = 'updated'
        delete m.message
        delete m.budgetSince
        continue
      }
      // A change the operator's damage budget holds has not been applied: the CR waits, and so
      // does its deadline, which runs again from where it stopped once the budget lets it through.
      const wait = m.state === 'moving' ? budgetWait(cr) : undefined
      if (wait !== undefined) {
        m.budgetSince ??= now.toISOString()
        m.message = `waits on the damage budget: ${wait.message}`
        budgets.add(wait.budget)
        continue
      }
      if (m.budgetSince !== undefined) {
        if (m.since !== undefined) m.since = new Date(Date.parse(m.since) + now.getTime() - Date.parse(m.budgetSince)).toISOString()
        delete m.budgetSince
      }
      if (m.state === 'updated' || now.getTime() - Date.parse(m.since ?? '') > settings.deadlineMs) {
        m.message = m.state === 'updated' ? `healthy on ${target}, then not during the bake: ${h.why}` : `not Ready and Available on ${target} within ${ro.spec.healthDeadline ?? '5m'}: ${h.why}`
        m.state = 'failed'
        failed.push({ m, cr })
        continue
      }
      m.message = h.why
    }
    if (failed.length > 0) return this.#halt(ro, st, byKey, failed, crs, waves)
    // Move the pending CRs, maxInFlight at a time, each planned again first (the free slots' worth
    // in one plan: one list per kind); a held CR takes no slot.
    let inFlight = members.filter((x) => x.state === 'moving').length
    // A person who pinned a CR of the wave since it started decides for it.
    for (const m of members.filter((x) => x.state === 'pending' && byKey.has(x.memcached) && personPin(byKey.get(x.memcached)!) !== undefined)) {
      const cr = byKey.get(m.memcached)!
      m.state = 'held'
      m.message = `pinned to ${pinOf(cr)} by ${personPin(cr)}`
      st.held = [...(st.held ?? []), { memcached: m.memcached, reason: m.message }]
    }
    const pending = members.filter((x) => x.state === 'pending')
    while (inFlight < settings.maxInFlight && pending.length > 0) {
      const batch = pending.splice(0, settings.maxInFlight - inFlight)
      for (const m of batch.filter((x) => !byKey.has(x.memcached))) {
        m.state = 'held'
        m.message = 'deleted during the rollout'
      }
      const crsNow = batch.filter((x) => x.state === 'pending').map((x) => byKey.get(x.memcached)!)
      if (crsNow.length === 0) continue
      const namespaces = new Set(crsNow.map((cr) => cr.metadata.namespace ?? 'default'))
      const fresh = await this.#plan(chart, crsNow, namespaces.size === 1 ? [...namespaces][0] : undefined)
      for (const cr of crsNow) {
        const m = batch.find((x) => x.memcached === crKey(cr))!
        const from = cr.status?.chartRevision ?? this.#o.revisions.defaultRevision().name
        const reasons = holdReasons(plan.get(crKey(cr)), fresh.get(crKey(cr))!)
        if (reasons.length > 0) {
          await this.#pin(cr, from)
          m.state = 'held'
          m.from = from
          m.message = reasons.join('; ')
          st.held = [...(st.held ?? []), { memcached: m.memcached, reason: m.message }]
          await this.#event(ro, 'Warning', 'Held', `Memcached ${m.memcached} held on ${from}: ${m.message}`)
          continue
        }
        try {
          await this.#pin(cr, target)
        } catch (err) {
          if (!isConflict(err)) throw err
          // Pinned by somebody else between the list and the apply: the next pass holds it.
          continue
        }
        m.state = 'moving'
        m.from = from
        m.since = now.toISOString()
        inFlight++
      }
    }
    // The wave is done when nothing is pending or moving: bake, then the next wave.
    if (members.every((x) => x.state === 'updated' || x.state === 'held')) {
      if (settings.bakeMs > 0 && st.bakeUntil === undefined) st.bakeUntil = new Date(now.getTime() + settings.bakeMs).toISOString()
      if (st.bakeUntil === undefined || now.getTime() >= Date.parse(st.bakeUntil)) {
        await this.#event(ro, 'Normal', 'WaveComplete', `wave ${(st.currentWave ?? 0) + 1}/${waves}: ${members.filter((x) => x.state === 'updated').length} Memcacheds on ${target}, ${members.filter((x) => x.state === 'held').length} held`)
        st.currentWave = (st.currentWave ?? 0) + 1
        st.members = []
        delete st.bakeUntil
        st.message = `wave ${st.currentWave}/${waves} complete`
      } else st.message = `wave ${(st.currentWave ?? 0) + 1}/${waves} bakes until ${st.bakeUntil}`
    } else st.message = `wave ${(st.currentWave ?? 0) + 1}/${waves}: ${members.filter((x) => x.state === 'moving').length} moving, ${members.filter((x) => x.state === 'pending').length} pending`
    await this.#budgetCondition(ro, st, members, budgets, waves)
    await this.#write(ro, this.#counted(st, crs, target, waves))
  }

  /**
   * Progressing says when the wave waits on the operator's damage budget (`budgets`: the ones
   * that hold its CRs), with a Normal event when it starts to, and says so no longer once it
   * does not.
   */
  async #budgetCondition(ro: Rollout, st: RolloutStatus, members: WaveMember[], budgets: ReadonlySet<string>, waves: number): Promise<void> {
    const before = (st.conditions ?? []).find((c) => c.type === 'Progressing')?.reason === 'BudgetExhausted'
    if (budgets.size === 0) {
      if (before) this.#setPhase(st, 'Progressing', 'Moving', st.message ?? '')
      return
    }
    const held = members.filter((m) => m.budgetSince !== undefined).length
    const flag: Record<string, string> = { restarts: 'pod restarts (--max-restarts)', deletes: 'deletes (--max-deletes)', recreations: 're-creations at a time (--max-concurrent-recreations)' }
    const flags = ['restarts', 'deletes', 'recreations'].filter((b) => budgets.has(b)).map((b) => flag[b]!)
    const count = (state: string) => members.filter((m) => m.state === state).length
    const message = `wave ${(st.currentWave ?? 0) + 1}/${waves} waits on the damage budget: ${held} of its Memcacheds wait for the operator's budget of ${flags.join(' and ')}; their health deadline does not run meanwhile (${count('moving')} moving, ${count('pending')} pending)`
    this.#setPhase(st, 'Progressing', 'BudgetExhausted', message)
    if (!before) await this.#event(ro, 'Normal', 'BudgetExhausted', message)
  }

  /**
   * The wave failed its gate: what the kubelet says of the failing CRs' pods is added to their
   * messages (for the first {@link CRS_NAMED}: a bounded read), the wave is returned, and the
   * rollout halts naming them.
   */
  async #halt(ro: Rollout, st: RolloutStatus, byKey: Map<string, FleetCr>, failed: { m: WaveMember; cr: FleetCr & Memcached }[], crs: FleetCr[], waves: number): Promise<void> {
    const named = failed.slice(0, CRS_NAMED)
    for (const { m, cr } of named) {
      const pods = await whyPodsFail(this.#o.client, cr)
      if (pods !== undefined) m.message = `${m.message}; ${pods}`
    }
    const [first, ...others] = named.map(({ m }) => `Memcached ${m.memcached}`)
    let why = `${first} failed the health gate in wave ${(st.currentWave ?? 0) + 1}/${waves}: ${named[0]!.m.message}`
    for (const [i, other] of others.entries()) why += `; ${other} too: ${named[i + 1]!.m.message}`
    if (failed.length > named.length) why += `; ${failed.length - named.length} more Memcacheds of the wave failed it too`
    // The others of the wave say why they were returned, naming who failed: the details are the rollout's message.
    const names = named.map(({ m }) => m.memcached).join(', ')
    await this.#returnWave(st, byKey, `returned with its wave: ${names}${failed.length > named.length ? ` and ${failed.length - named.length} more` : ''} failed the health gate`)
    await this.#event(ro, 'Warning', 'HealthGateFailed', why)
    return this.#end(ro, st, 'Halted', 'HealthGateFailed', `${why}; the wave was returned to its previous revisions and no later wave was started`, crs, waves)
  }

  /** The plan of `crs`, with the platform found once. */
  async #plan(chart: Chart, crs: readonly Memcached[], namespace?: string): Promise<Map<string, PlannedCr>> {
    this.#platform ??= await detectPlatform(this.#o.client)
    return planFleet(this.#o.client, chart, this.#o.own(), crs, this.#platform, namespace)
  }

  /** Writes spec.chartRevision of `cr` under the rollout's field manager. */
  async #pin(cr: FleetCr, revision: string): Promise<void> {
    await this.#o.client.apply({ ...MC, metadata: { name: cr.metadata.name ?? '', namespace: cr.metadata.namespace ?? 'default' }, spec: { chartRevision: revision } }, { fieldManager: ROLLOUT_MANAGER })
  }

  /** Returns the CRs of the current wave that were moved to their previous revisions. */
  async #returnWave(st: RolloutStatus, byKey: Map<string, FleetCr>, why: string): Promise<void> {
    for (const m of st.members ?? []) {
      if (!['moving', 'updated', 'failed'].includes(m.state) || m.from === undefined) continue
      const cr = byKey.get(m.memcached)
      let kept: string | undefined
      if (cr !== undefined) {
        try {
          await this.#pin(cr, m.from)
        } catch (err) {
          // A person pinned it to another revision since (their field now): theirs to decide.
          if (isConflict(err)) kept = `not returned: spec.chartRevision was set to ${pinOf(cr) ?? '?'} by ${personPin(cr) ?? 'another manager'} since`
          else if (!isNotFound(err)) throw err
        }
      }
      if (m.state !== 'failed') m.message = why
      if (kept !== undefined) m.message = m.state === 'failed' ? `${m.message}; ${kept}` : kept
      m.state = kept !== undefined ? 'held' : 'returned'
    }
  }

  /** The last wave is done: the target becomes the default, and the rollout's pins to it go. */
  async #finish(ro: Rollout, st: RolloutStatus, crs: FleetCr[], target: string, waves: number): Promise<void> {
    const client = this.#o.client
    const revision = (await client.list(REV, { fieldSelector: `metadata.name=${target}` })).items[0]
    const chart = revision?.metadata.labels?.[CHART_LABEL]
    await client.patch({ ...REV, name: target }, { metadata: { labels: { [DEFAULT_LABEL]: 'true' }, annotations: { [PROMOTED_AT]: this.#now().toISOString() } } }, { type: 'merge' })
    const others = (await client.list(REV, { labelSelector: `${DEFAULT_LABEL}=true${chart !== undefined ? `,${CHART_LABEL}=${chart}` : ''}` })).items.filter((o) => o.metadata.name !== target)
    for (const o of others) await client.patch({ ...REV, name: o.metadata.name ?? '' }, { metadata: { labels: { [DEFAULT_LABEL]: null } } }, { type: 'merge' })
    let unpinned = 0
    for (const cr of crs) {
      if (pinOf(cr) !== target || !pinOwners(cr).includes(ROLLOUT_MANAGER)) continue
      // An apply without the field: the rollout no longer owns spec.chartRevision, which goes when nobody else owns it.
      await client.apply({ ...MC, metadata: { name: cr.metadata.name ?? '', namespace: cr.metadata.namespace ?? 'default' } }, { fieldManager: ROLLOUT_MANAGER })
      unpinned++
    }
    const held = (st.held ?? []).length
    await this.#event(ro, 'Normal', 'Promoted', `${target} promoted: Memcacheds without spec.chartRevision run it; ${unpinned} pins of the rollout removed${held > 0 ? `, ${held} held Memcacheds keep theirs` : ''}`)
    st.members = []
    return this.#end(ro, st, 'Succeeded', 'Promoted', `every wave is on ${target}, promoted the default${held > 0 ? `; ${held} held (status.held)` : ''}`, crs, waves)
  }

  /** Ends the rollout in a terminal phase. */
  async #end(ro: Rollout, st: RolloutStatus, phase: RolloutPhase, reason: string, message: string, crs?: FleetCr[], waves?: number): Promise<void> {
    this.#setPhase(st, phase, reason, message)
    if (phase === 'Failed' || phase === 'Aborted') await this.#event(ro, 'Warning', reason, message)
    this.#plans.delete(ro.metadata.uid ?? '')
    await this.#write(ro, crs !== undefined && waves !== undefined ? this.#counted(st, crs, ro.spec.revision, waves) : st)
    this.#o.log.info({ rollout: ro.metadata.name, phase, reason }, message)
  }

  /** Sets the phase, the message and the conditions (Ready: done; Progressing: moving; Halted: stopped short). */
  #setPhase(st: RolloutStatus, phase: RolloutPhase, reason: string, message: string): void {
    st.phase = phase
    st.message = message
    const now = this.#now()
    let conditions = (st.conditions ?? []) as Condition[]
    const set = (type: string, status: 'True' | 'False', r: string): void => {
      conditions = setCondition(conditions, { type, status, reason: r, message } as ConditionInput, now)
    }
    set('Ready', phase === 'Succeeded' ? 'True' : 'False', phase === 'Succeeded' ? reason : phase)
    set('Progressing', phase === 'Progressing' ? 'True' : 'False', phase === 'Progressing' ? reason : phase)
    set('Halted', phase === 'Halted' || phase === 'Aborted' || phase === 'Failed' ? 'True' : 'False', phase === 'Halted' || phase === 'Aborted' || phase === 'Failed' ? reason : 'NotHalted')
    st.conditions = conditions
  }

  /** The counts and printer columns. */
  #counted(st: RolloutStatus, crs: FleetCr[], target: string, waves: number): RolloutStatus {
    st.total = crs.length
    st.updated = crs.filter((cr) => health(cr, target).healthy).length
    st.progress = `${st.updated}/${st.total}`
    st.wave = `${Math.min((st.currentWave ?? 0) + 1, waves)}/${waves}`
    return st
  }

  /** Writes the status when it changed (a PUT of /status: a conflict is retried at the next pass). */
  async #write(ro: Rollout, st: RolloutStatus): Promise<void> {
    // A step taken (a phase or wave begun) may let the next one be taken at once: the next pass
    // comes kickMs after this one, not at the poll. A bake ends at its time.
    if (ro.status?.phase !== st.phase || ro.status?.currentWave !== st.currentWave) this.#kicked = true
    if (st.bakeUntil !== undefined && !TERMINAL.includes(st.phase as RolloutPhase)) this.#wakeAt = Math.min(this.#wakeAt ?? Infinity, Date.parse(st.bakeUntil))
    if (JSON.stringify(ro.status ?? {}) === JSON.stringify(st)) return
    try {
      await this.#o.client.replaceStatus({ ...RO, metadata: ro.metadata, spec: ro.spec, status: st } as unknown as KubeObject)
    } catch (err) {
      if (!isConflict(err) && !isNotFound(err)) throw err
    }
  }

  /** An Event about the Rollout (cluster-scoped objects' events go to the default namespace, as kubectl describe looks for them). */
  async #event(ro: Rollout, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const at = this.#now().toISOString().replace(/\.\d{3}Z$/, 'Z')
    try {
      await this.#o.client.create({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${ro.metadata.name}.${Date.now().toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`, namespace: 'default' },
        involvedObject: { apiVersion: ROLLOUT_API_VERSION, kind: ROLLOUT_KIND, name: ro.metadata.name, uid: ro.metadata.uid ?? '' },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component: 'memcached-operator-rollout' },
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
        reportingComponent: 'memcached-operator-rollout',
      } as unknown as KubeObject)
    } catch (err) {
      this.#o.log.warn({ rollout: ro.metadata.name, reason, err: err instanceof Error ? err.message : String(err) }, 'could not record an event')
    }
  }
}
