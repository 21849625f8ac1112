/** The PATH search lives in util/subprocess.ts; this re-export keeps cli/doctor-checks.ts's import. */
export { which } from '../../../util/subprocess.ts';
