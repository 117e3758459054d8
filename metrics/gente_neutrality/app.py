import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("gente_neutrality")
launch_gradio_widget(module)
