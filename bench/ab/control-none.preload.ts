import { announce } from './replace-export';

/** The A/B's control: a preload that replaces nothing, so its process differs from all on's by nothing but being another process. */
announce('control: nothing replaced');
