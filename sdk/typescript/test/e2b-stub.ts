// E2B's `Sandbox`, as far as the README's integration uses it: what it was asked to create is
// recorded (E2B's service cannot be reached from the tests).
export class Sandbox {
  static created: { envs: Record<string, string>; metadata?: Record<string, string> }[] = [];

  private constructor(readonly opts: { envs: Record<string, string>; metadata?: Record<string, string> }) {}

  static async create(opts: { envs: Record<string, string>; metadata?: Record<string, string> }): Promise<Sandbox> {
    Sandbox.created.push(opts);
    return new Sandbox(opts);
  }
}
