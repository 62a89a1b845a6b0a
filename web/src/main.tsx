// The console's entry: theme and language first (no flash of the wrong one), then the app.
import { render } from 'preact';
import './theme';
import './i18n';
import './styles.css';
import { App } from './app';

render(<App />, document.getElementById('app')!);
