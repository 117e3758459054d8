"""The Hugging Face Hub: publishing datasets and metrics, submitting results, the leaderboard and its site."""
