/**
 * The Rollout custom resource (rollouts.cache.example.com): a staged move of the Memcached fleet
 * to a ChartRevision, in waves with a health gate, that the operator drives (fleet/rollout.ts;
 * docs/fleet.md). Cluster-scoped, as the revisions it moves between and the promotion it ends
 * with are: a rollout decides what every namespace runs. Its schema is fixed;
 * `memcached-operator crd --kind Rollout` prints it.
 */
import { crdOf } from './crd-envelope.ts'
import { GROUP, VERSION } from './memcached.ts'

export const ROLLOUT_KIND = 'Rollout'
export const ROLLOUT_PLURAL = 'rollouts'
export const ROLLOUT_API_VERSION = `${GROUP}/${VERSION}`

/** A metav1.LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[]
}

/** One wave: the Memcacheds its selector matches among those no earlier wave took, at most `percent` of the fleet. */
export interface WaveSpec {
  name?: string
  selector?: LabelSelector
  /** At most this share of the rollout's Memcacheds (rounded up); absent: every one the selector matches. */
  percent?: number
}

export interface RolloutSpec {
  /** The ChartRevision to move the fleet to. */
  revision: string
  /** In order; the Memcacheds no wave takes make a last wave of their own. Absent or empty: one wave. */
  waves?: WaveSpec[]
  /** Memcacheds of a wave moved and not yet healthy at once (default 1). */
  maxInFlight?: number
  /** How long every CR of a wave must stay healthy before the next wave starts (Go duration, default 0s). */
  bakeTime?: string
  /** How long a moved CR has to be Ready and Available on the revision (Go duration, default 5m). */
  healthDeadline?: string
  /** No CR is moved while true; the CRs in flight keep their deadline. */
  paused?: boolean
  /** Stops the rollout for good and returns the current wave to its previous revisions. */
  abort?: boolean
}

/** What happened to one CR of the current wave. */
export type MemberState = 'pending' | 'moving' | 'updated' | 'held' | 'failed' | 'returned'

export interface WaveMember {
  /** `namespace/name`. */
  memcached: string
  /** The revision it ran before the rollout moved it (status.chartRevision). */
  from?: string
  state: MemberState
  /** When it was moved (RFC 3339); moved later by the time the damage budget held it, during which its deadline does not run. */
  since?: string
  /** Since when the operator's damage budget holds its change (RFC 3339), while it does. */
  budgetSince?: string
  message?: string
}

export type RolloutPhase = 'Pending' | 'Progressing' | 'Paused' | 'Succeeded' | 'Halted' | 'Aborted' | 'Failed'

export interface RolloutStatus {
  phase?: RolloutPhase
  observedGeneration?: number
  /** `2/4`: the current wave and how many there are (a printer column). */
  wave?: string
  /** `12/20`: CRs on the revision and healthy, of the fleet (a printer column). */
  progress?: string
  updated?: number
  total?: number
  /** How many waves the fleet fell into when the rollout started. */
  waveCount?: number
  /** The index of the current wave, from 0. */
  currentWave?: number
  /** How many CRs of the fleet each planned class holds (the plan made when the rollout started). */
  plan?: Record<string, number>
  /** The CRs of the current wave. */
  members?: WaveMember[]
  /** CRs held out of the rollout, with why (a person's pin, a change that no longer matches the plan). */
  held?: { memcached: string; reason: string }[]
  /** When the current wave's bake ends (RFC 3339). */
  bakeUntil?: string
  message?: string
  conditions?: { type: string; status: 'True' | 'False' | 'Unknown'; reason: string; message: string; lastTransitionTime: string; observedGeneration?: number }[]
}

export interface Rollout {
  apiVersion: string
  kind: string
  metadata: { name: string; uid?: string; generation?: number; resourceVersion?: string; creationTimestamp?: string; annotations?: Record<string, string> }
  spec: RolloutSpec
  status?: RolloutStatus
}

const selectorSchema = {
  type: 'object',
  description: 'A label selector on the Memcacheds (metav1.LabelSelector).',
  properties: {
    matchLabels: { type: 'object', additionalProperties: { type: 'string' } },
    matchExpressions: {
      type: 'array',
      items: {
        type: 'object',
        required: ['key', 'operator'],
        properties: { key: { type: 'string' }, operator: { type: 'string', enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'] }, values: { type: 'array', items: { type: 'string' } } },
      },
    },
  },
}

const duration = (description: string) => ({ type: 'string', pattern: '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$', description })

/** The CRD object. */
export function rolloutCRD(): Record<string, unknown> {
  return crdOf({ kind: ROLLOUT_KIND, plural: ROLLOUT_PLURAL, singular: 'rollout', shortNames: ['mcro'] }, 'Cluster', {
    subresources: { status: {} },
    additionalPrinterColumns: [
      { name: 'Revision', type: 'string', jsonPath: '.spec.revision', description: 'The ChartRevision the fleet moves to' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Pending, Progressing, Paused, Succeeded, Halted, Aborted or Failed' },
      { name: 'Wave', type: 'string', jsonPath: '.status.wave', description: 'The current wave, of how many' },
      { name: 'Updated', type: 'string', jsonPath: '.status.progress', description: 'Memcacheds on the revision and healthy, of the fleet' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    schema: {
      openAPIV3Schema: {
        type: 'object',
        description: `${ROLLOUT_KIND} moves the Memcacheds to a ChartRevision wave by wave, each CR healthy on it before the next moves, and promotes the revision at the end; a wave that fails its health gate is returned to its previous revisions and the rollout halts (docs/fleet.md).`,
        properties: {
          apiVersion: { type: 'string' },
          kind: { type: 'string' },
          metadata: { type: 'object' },
          spec: {
            type: 'object',
            required: ['revision'],
            'x-kubernetes-validations': [{ rule: 'self.revision == oldSelf.revision', message: 'the revision of a Rollout cannot change: create another Rollout' }],
            properties: {
              revision: { type: 'string', minLength: 1, description: 'The ChartRevision to move the fleet to (kubectl get chartrevisions).' },
              waves: {
                type: 'array',
                maxItems: 20,
                description: 'The waves, in order. A wave takes the Memcacheds its selector matches among those no earlier wave took, at most percent of the fleet (rounded up). The Memcacheds no wave takes make a last wave. Absent: one wave of every Memcached.',
                items: {
                  type: 'object',
                  properties: {
                    name: { type: 'string' },
                    selector: selectorSchema,
                    percent: { type: 'integer', minimum: 1, maximum: 100, description: 'At most this share of the fleet, rounded up; absent: every Memcached the selector matches.' },
                  },
                },
              },
              maxInFlight: { type: 'integer', minimum: 1, description: 'Memcacheds moved and not yet healthy at once (default 1).' },
              bakeTime: duration('How long every Memcached of a wave must stay healthy before the next wave starts (default 0s).'),
              healthDeadline: duration('How long a moved Memcached has to run the revision Ready and Available (default 5m); past it the wave fails.'),
              paused: { type: 'boolean', description: 'No Memcached is moved while true.' },
              abort: { type: 'boolean', description: 'Ends the rollout and returns the current wave to its previous revisions.' },
            },
          },
          status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        },
        required: ['spec'],
      },
    },
  })
}
