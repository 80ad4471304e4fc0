/**
 * A render failure that keeps every problem found, each already located: a values path
 * (`spec.size: must be >= 0`), a template and line (`templates/deployment.ejs:12`), or an input
 * document. Nothing is applied when rendering fails, so the whole list is what the user sees.
 */
export class RenderError extends Error {
  /** What failed: the values, a template, the YAML a template produced, the input CR, or a guard. */
  readonly kind: 'values' | 'template' | 'yaml' | 'input' | 'guard'
  /** Every problem, one line each, in the order found. */
  readonly problems: string[]

  constructor(kind: RenderError['kind'], problems: string[]) {
    super(problems.length === 1 ? problems[0] : `${problems.length} problems:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'RenderError'
    this.kind = kind
    this.problems = problems
  }
}

/**
 * A module the running process cannot load: thrown only inside the start-up snapshot of `render`
 * (operator/snapshot), whose entry then runs the command from the sources instead.
 */
export class ModuleUnavailable extends Error {
  readonly id: string
  constructor(id: string) {
    super(`module ${id} is not available in this process`)
    this.name = 'ModuleUnavailable'
    this.id = id
  }
}
